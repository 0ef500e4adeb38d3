package modelapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// OpenAIEmbedder embeds texts with an OpenAI-compatible embeddings
// endpoint (POST {URL}/embeddings, as OpenAI, Azure OpenAI's v1 API,
// Ollama, vLLM, LiteLLM and most gateways serve it): it is an
// mcpvisor.Options.Embedder, so search_tools finds tools by meaning as
// well as by words. Its zero value is not usable: URL and Model are
// required. Safe for concurrent use.
type OpenAIEmbedder struct {
	// URL is the API's base, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1; "/embeddings" is appended.
	URL string
	// Model is the embeddings model, e.g. text-embedding-3-small.
	Model string
	// APIKey is sent as a bearer token when set.
	APIKey string
	// Client is the HTTP client; nil: http.DefaultClient.
	Client *http.Client
}

// maxEmbeddingResponse bounds what is read of an answer.
const maxEmbeddingResponse = 256 << 20

// Embed returns one vector per text, in order. It blocks on the endpoint
// and honours ctx.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if e.URL == "" || e.Model == "" {
		return nil, fmt.Errorf("modelapi: OpenAIEmbedder needs a URL and a Model")
	}
	body, err := json.Marshal(map[string]any{"model": e.Model, "input": texts})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(e.URL, "/")+"/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	client := e.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("modelapi: embeddings: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbeddingResponse))
	if err != nil {
		return nil, fmt.Errorf("modelapi: embeddings: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return nil, fmt.Errorf("modelapi: embeddings: HTTP %d: %s", resp.StatusCode, e.Error.Message)
	}
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("modelapi: embeddings: the answer is not an embeddings list: %w", err)
	}
	vecs := make([][]float32, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(texts) || vecs[d.Index] != nil {
			return nil, fmt.Errorf("modelapi: embeddings: the answer's index %d does not match the %d texts sent", d.Index, len(texts))
		}
		vecs[d.Index] = d.Embedding
	}
	for i, v := range vecs {
		if v == nil {
			return nil, fmt.Errorf("modelapi: embeddings: no vector for text %d of %d", i, len(texts))
		}
	}
	return vecs, nil
}
