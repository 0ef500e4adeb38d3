package actors

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// The frames waiting for a remote server are bounded by WriteQueue: past
// the POSTs in flight, the one the dispatcher holds and the queue, send
// refuses with ErrNotReading; once the server answers, every accepted frame
// is posted and the queue takes frames again.
func TestHTTPQueueBound(t *testing.T) {
	release := make(chan struct{})
	posted := make(chan struct{}, 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		posted <- struct{}{}
		<-release
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	spec := ServerSpec{Name: "h", Transport: TransportHTTP, URL: srv.URL, AllowPrivate: true, WriteQueue: 4}.WithDefaults()
	c := startHTTP(1, &spec, func(any) {}, func(*protocol.Message) bool { return false })
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.close(ctx)
	}()

	// The dispatcher takes at most httpWorkers frames to post, and one more
	// that waits for a worker; the queue holds WriteQueue.
	most := httpWorkers + 1 + spec.WriteQueue
	accepted := 0
	var err error
	for range most + 1 {
		if err = c.send(notificationOut("notifications/progress", nil)); err != nil {
			break
		}
		accepted++
	}
	if !errors.Is(err, ErrNotReading) {
		t.Fatalf("after %d frames accepted: %v, want ErrNotReading", accepted, err)
	}
	if accepted < spec.WriteQueue || accepted > most {
		t.Errorf("%d frames accepted, want %d to %d", accepted, spec.WriteQueue, most)
	}

	close(release)
	timeout := time.After(10 * time.Second)
	for i := range accepted {
		select {
		case <-posted:
		case <-timeout:
			t.Fatalf("%d of the %d accepted frames posted", i, accepted)
		}
	}
	if err := c.send(notificationOut("notifications/progress", nil)); err != nil {
		t.Fatalf("send once the server answered: %v", err)
	}
	select {
	case <-posted:
	case <-timeout:
		t.Fatal("the frame sent once the queue drained was not posted")
	}
}
