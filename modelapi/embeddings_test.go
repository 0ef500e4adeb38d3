package modelapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/modelapi"
)

// OpenAIEmbedder takes the vectors in the order of their index, sends the
// key, and says what is wrong with an answer it cannot use.
func TestOpenAIEmbedder(t *testing.T) {
	answer := `{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}]}`
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "wrong request", http.StatusTeapot)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(answer))
	}))
	defer srv.Close()
	e := &modelapi.OpenAIEmbedder{URL: srv.URL + "/v1/", Model: "m", APIKey: "k"}
	ctx := context.Background()
	vecs, err := e.Embed(ctx, []string{"a", "b"})
	if err != nil || len(vecs) != 2 || vecs[0][0] != 1 || vecs[1][1] != 1 {
		t.Fatalf("Embed = %v, %v", vecs, err)
	}
	for _, tc := range []struct {
		answer string
		status int
		want   string
	}{
		{`{"error":{"message":"invalid api key"}}`, http.StatusUnauthorized, "HTTP 401: invalid api key"},
		{`{"data":[{"index":0,"embedding":[1]}]}`, http.StatusOK, "no vector for text 1 of 2"},
		{`{"data":[{"index":5,"embedding":[1]}]}`, http.StatusOK, "index 5"},
		{`not json`, http.StatusOK, "not an embeddings list"},
	} {
		answer, status = tc.answer, tc.status
		if _, err := e.Embed(ctx, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("answer %s: %v, want %q", tc.answer, err, tc.want)
		}
	}
	if _, err := (&modelapi.OpenAIEmbedder{URL: srv.URL}).Embed(ctx, []string{"a"}); err == nil {
		t.Error("no model: no error")
	}
}
