package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/cluster"
	"github.com/mcpvisor/mcpvisor/cluster/consul"
	"github.com/mcpvisor/mcpvisor/cluster/etcd"
	"github.com/mcpvisor/mcpvisor/cluster/kubernetes"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// serveFlags are the flags of serve alone.
func serveFlags(fs *flag.FlagSet, f *flags) {
	fs.StringVar(&f.listen, "listen", defaultListen, "the `ADDR` to serve the HTTP API on; a non-loopback one needs --tls-cert and --tls-key")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate (chain) `FILE` to serve HTTPS with")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM private key `FILE` of --tls-cert")
	fs.StringVar(&f.tokenFile, "token-file", "", "`FILE` holding the gateway token, an MCP client's (/mcp, calls, reads); default DIR/token, generated (mode 0600) on first start")
	fs.StringVar(&f.adminTokenFile, "admin-token-file", "", "`FILE` holding the admin token, the person's (the CLI's and the inbox page's: servers, sign-in, approvals); default DIR/admin-token, generated with DIR/token. Without one, the gateway token is both, with a warning")
	fs.StringVar(&f.publicURL, "public-url", "", "the `URL` people reach this sidecar at (https://mcp.example): sign-ins then redirect to URL/oauth/callback, served here, instead of a loopback listener on this host")
	fs.StringVar(&f.allowedOrigins, "allowed-origins", "", "`ORIGINS`, comma-separated (https://app.example), whose browser pages may call /mcp and change state through /v1; by default only loopback origins, the sidecar's own (/v1) and requests without Origin")
	fs.StringVar(&f.cluster, "cluster", "", "make this sidecar one member of the cluster `NAME`: each server runs on one member, and every member serves them all")
	fs.StringVar(&f.clusterProvider, "provider", "etcd", "how the cluster's members find each other, a `PROVIDER`: etcd (--etcd), consul (--consul), kubernetes (Leases; in a pod by default, else --k8s-*), or automanaged (--peers, --member-listen: one machine or tests)")
	fs.DurationVar(&f.clusterTTL, "cluster-ttl", 0, "etcd, consul, kubernetes: how long a member that stopped renewing its place (killed, cut off) keeps it, a `DURATION` (0: 3 s; consul 10 s, its minimum); shorter fails over sooner, and fences a member after two thirds of it without an answer")
	fs.StringVar(&f.consul, "consul", "http://127.0.0.1:8500", "consul: the agent's HTTP API `URL`; its ACL token, if it needs one, in CONSUL_HTTP_TOKEN")
	fs.StringVar(&f.k8sNamespace, "k8s-namespace", "", "kubernetes: the `NAMESPACE` that holds the members' Leases (default: the pod's)")
	fs.StringVar(&f.k8sAPI, "k8s-api", "", "kubernetes: the API server's `URL` (default: in-cluster, from KUBERNETES_SERVICE_HOST and _PORT)")
	fs.StringVar(&f.k8sTokenFile, "k8s-token-file", "", "kubernetes: the service account token `FILE` (default: the pod's mounted one)")
	fs.StringVar(&f.k8sCAFile, "k8s-ca-file", "", "kubernetes: the API server's CA `FILE` (default: the pod's mounted one)")
	fs.StringVar(&f.peers, "peers", "", "automanaged: every member's --member-listen `ADDRS`, comma-separated")
	fs.StringVar(&f.memberListen, "member-listen", "", "automanaged: the `ADDR` where this member answers the others' GET /_member")
	fs.StringVar(&f.etcd, "etcd", "http://127.0.0.1:2379", "the etcd client `URLS`, comma-separated, that keep the cluster's members (--provider etcd)")
	fs.StringVar(&f.clusterListen, "cluster-listen", "127.0.0.1:0", "the `ADDR` this member listens on for the other members (gRPC)")
	fs.StringVar(&f.clusterLabels, "cluster-labels", "", "`LABELS`, comma-separated, this member offers: a server whose config names a \"node\" runs only on members labelled so")
	fs.StringVar(&f.clusterTLSCert, "cluster-tls-cert", "", "PEM certificate `FILE` this member presents to the others, signed by --cluster-ca (with --cluster-tls-key; required with --cluster): the members talk over mutual TLS, and a member's name is its certificate's CommonName")
	fs.StringVar(&f.clusterTLSKey, "cluster-tls-key", "", "PEM private key `FILE` of --cluster-tls-cert")
	fs.StringVar(&f.clusterCA, "cluster-ca", "", "PEM `FILE` of the cluster's CA: only members with a certificate it signed are reached or accepted")
	fs.StringVar(&f.clusterMember, "cluster-member", "", "this member's `NAME`, which must be its --cluster-tls-cert's CommonName (default: the certificate's)")
	fs.BoolVar(&f.clusterInsecureLoopback, "cluster-insecure-loopback", false, "INSECURE, for tests on one machine: let the members talk without TLS, when --cluster-listen, --advertise and --member-listen are loopback; any local process can then run commands through a member")
	fs.StringVar(&f.advertise, "advertise", "", "the `ADDR` the other members reach this one at, when not --cluster-listen's")
	fs.StringVar(&f.allowedHosts, "allowed-hosts", "", "`NAMES`, comma-separated, that requests to /mcp and /v1 on a loopback --listen may give as Host besides localhost and loopback addresses (a reverse proxy that keeps the client's Host); any other is refused, against DNS rebinding")
}

// clusterOptions are --cluster's: nil without it.
func clusterOptions(f flags) (mcpvisor.Cluster, error) {
	if f.cluster == "" {
		return nil, nil
	}
	co := cluster.Options{Name: f.cluster, Listen: f.clusterListen, Advertise: f.advertise, Labels: splitList(f.clusterLabels),
		Member: f.clusterMember, InsecureLoopback: f.clusterInsecureLoopback}
	switch set := btoi(f.clusterTLSCert != "") + btoi(f.clusterTLSKey != "") + btoi(f.clusterCA != ""); set {
	case 0:
		if !f.clusterInsecureLoopback {
			return nil, &exitError{code: 2, msg: "serve: --cluster needs mutual TLS between the members: --cluster-tls-cert, --cluster-tls-key and --cluster-ca (or, for tests on one machine, --cluster-insecure-loopback)"}
		}
	case 3:
		co.TLS = &cluster.TLS{CertFile: f.clusterTLSCert, KeyFile: f.clusterTLSKey, CAFile: f.clusterCA}
	default:
		return nil, &exitError{code: 2, msg: "serve: --cluster-tls-cert, --cluster-tls-key and --cluster-ca go together"}
	}
	switch f.clusterProvider {
	case "etcd":
		endpoints := splitList(f.etcd)
		if len(endpoints) == 0 {
			return nil, &exitError{code: 2, msg: "serve: --provider etcd needs --etcd URLS"}
		}
		co.Members = etcd.Members(etcd.Options{Endpoints: endpoints, TTL: f.clusterTTL})
	case "automanaged":
		peers := splitList(f.peers)
		if len(peers) == 0 || f.memberListen == "" {
			return nil, &exitError{code: 2, msg: "serve: --provider automanaged needs --peers ADDRS and --member-listen ADDR"}
		}
		co.Members = cluster.Automanaged(cluster.AutomanagedOptions{Listen: f.memberListen, Peers: peers})
	case "consul":
		co.Members = consul.Members(consul.Options{Address: f.consul, Token: os.Getenv("CONSUL_HTTP_TOKEN"), TTL: f.clusterTTL})
	case "kubernetes":
		co.Members = kubernetes.Members(kubernetes.Options{APIServer: f.k8sAPI, Namespace: f.k8sNamespace, TokenFile: f.k8sTokenFile, CAFile: f.k8sCAFile, TTL: f.clusterTTL})
	default:
		return nil, &exitError{code: 2, msg: fmt.Sprintf("serve: --provider %q: want etcd, consul, kubernetes or automanaged", f.clusterProvider)}
	}
	return co, nil
}

// Serve defaults and bounds.
const (
	defaultListen = "127.0.0.1:7071"
	tokenBytes    = 32
)

// cmdServe runs the sidecar: the host with its inbox, behind the HTTP API,
// until ctx ends or SIGINT/SIGTERM arrives.
func cmdServe(ctx context.Context, f flags, args []string, stderr io.Writer) error {
	config, data, listen, tokenFile, tlsCert, tlsKey := f.config, f.data, f.listen, f.tokenFile, f.tlsCert, f.tlsKey
	if len(args) > 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("serve: unexpected argument %q%s", args[0], seeHelp("serve"))}
	}
	switch {
	case tlsCert != "" && tlsKey == "":
		return &exitError{code: 2, msg: "serve: --tls-cert needs --tls-key FILE, the certificate's private key"}
	case tlsKey != "" && tlsCert == "":
		return &exitError{code: 2, msg: "serve: --tls-key needs --tls-cert FILE, the certificate it belongs to"}
	case tlsCert == "":
		if err := checkLoopback(listen); err != nil {
			return &exitError{code: 2, msg: "serve: " + err.Error()}
		}
	}
	if err := checkPublicURL(f.publicURL); err != nil {
		return &exitError{code: 2, msg: "serve: --public-url: " + err.Error()}
	}
	tlsConfig, err := loadTLS(tlsCert, tlsKey)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	logger, err := newLogger(f.logLevel, f.logFormat, stderr)
	if err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	cfg, err := loadConfig(f, logger, stderr)
	if err != nil {
		return err
	}
	tokens, err := loadTokens(data, tokenFile, f.adminTokenFile)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if tokens.admin == "" {
		logger.Warn("one token is both the gateway token and the admin token: an MCP client given it may change the servers, "+
			"and approvals its requests raise cannot be answered with it; split them: "+
			"openssl rand -hex 32 > "+filepath.Join(data, adminTokenName)+" && chmod 600 "+filepath.Join(data, adminTokenName)+
			" (or --admin-token-file FILE), restart, and give MCP clients only "+tokens.gatewayPath+"; the CLI finds the admin token itself",
			"token_file", tokens.gatewayPath)
	}

	ctx, stop := signalContext(ctx)
	defer stop()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	metrics := sidecar.NewMetrics(sidecar.MetricsOptions{})
	defer startMetrics(ctx, logger, metrics.Gatherer())()
	ops := sidecar.NewOps(sidecar.OpsOptions{})
	defer ops.Close()
	// Host tools that change the servers wait for a person in the approval
	// inbox, which the API, the page and the CLI answer (or run at once
	// with --approve-host-tools), so a gateway client may activate them.
	tp, stopTracing := startTracing(ctx, logger)
	defer stopTracing()
	clusterOpts, err := clusterOptions(f)
	if err != nil {
		ln.Close()
		return err
	}
	transitions, stopTransitions := logTransitions(logger)
	defer stopTransitions()
	h, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: cfg, DataDir: data, Logger: logger, Inbox: true, ReapOrphans: true, OnEvent: transitions,
		CallSampling: true, CallRoots: true, ApprovalInbox: true, Approve: hostToolApproval(f.approveHostTools),
		AlwaysOn: f.alwaysOn(), SmallCatalogOn: !f.lazy, CallMiddleware: []mcpvisor.CallMiddleware{metrics.CallMiddleware, ops.CallMiddleware}, TracerProvider: tp,
		Cluster: clusterOpts, Journal: f.journalOptions(), SignInCallback: signInCallback(f.publicURL), Embedder: f.embedder(), EmbedderWeight: float64(f.embeddingsWeight)})
	if err != nil {
		ln.Close()
		return lockHint(err)
	}
	defer h.Close()
	stopReload := reloadOnHangup(ctx, h, f, logger, stderr)
	defer stopReload()
	metrics.Watch(h)
	ops.Watch(h)
	// Sidecars with one MCPVISOR_SECRET_KEY seal requestStates alike, so
	// a modern client's retry may reach any of them.
	g := gateway.New(h, gateway.Options{Logger: logger, AllowConfigGroup: true, SettleWait: listSettleWait, AllowedHosts: splitList(f.allowedHosts),
		AllowedOrigins: splitList(f.allowedOrigins),
		StateKey:       h.DerivedKey("gateway requestState")})
	defer g.Close()

	// The sidecar's Serve bounds connections and, when ctx ends, cancels
	// the calls in flight with a clear error before it returns.
	api := sidecar.New(h, sidecar.Options{Token: tokens.gateway, AdminToken: tokens.admin, DataDir: data, Logger: logger,
		Metrics: metrics.Handler(), Ops: ops, MCP: g.Handler(), TLSConfig: tlsConfig,
		AllowedOrigins: splitList(f.allowedOrigins), AllowedHosts: splitList(f.allowedHosts), PublicURL: f.publicURL})
	served := make(chan error, 1)
	go func() { served <- api.Serve(ctx, ln) }()
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	// The CLI's other commands find the sidecar through this note: it is
	// written before "listening" is said, so whoever waits for that line
	// finds the sidecar.
	absToken, _ := filepath.Abs(tokens.gatewayPath)
	var abs []string
	for _, c := range config {
		a, _ := filepath.Abs(c)
		abs = append(abs, a)
	}
	absConfig := strings.Join(abs, ", ")
	info := sidecarInfo{URL: scheme + "://" + dialAddr(ln.Addr()), PID: os.Getpid(), TokenFile: absToken, Config: absConfig}
	if tokens.admin != "" {
		info.AdminTokenFile, _ = filepath.Abs(tokens.adminPath)
	}
	if tlsConfig != nil {
		info.CertFile, _ = filepath.Abs(tlsCert)
	}
	if err := writeSidecarNote(data, info); err != nil {
		logger.Warn("could not write the sidecar note; the CLI will not find this sidecar", "err", err)
	}
	defer removeSidecarNote(data)
	if tokens.admin != "" {
		fmt.Fprintf(stderr, "mcpvisor serve: admin token in %s (the CLI's and the inbox page's; MCP clients get the token below)\n", tokens.adminPath)
	}
	// "listening" comes last: whoever waits for it has the whole banner.
	fmt.Fprintf(stderr, "mcpvisor serve: the inbox page: %s/ui/ (mcpvisor token --url opens it signed in)\n", info.URL)
	fmt.Fprintf(stderr, "mcpvisor serve: MCP clients: %s/mcp with Authorization: Bearer <the token in %s> (mcpvisor token prints it)\n", info.URL, tokens.gatewayPath)
	fmt.Fprintf(stderr, "mcpvisor serve: listening on %s://%s (token in %s)\n", scheme, ln.Addr(), tokens.gatewayPath)

	select {
	case err := <-served: // Serve returns before ctx ends only if the listener fails
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	case <-ctx.Done():
		fmt.Fprintln(stderr, "mcpvisor serve: shutting down")
		if err := <-served; err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	_ = g.Close()
	return h.Close()
}

// loadTLS loads the certificate pair for HTTPS, or returns nil when both
// names are empty. It reads the files now, so a bad one fails at start;
// the error names the file at fault.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert: %w", err)
	}
	if firstCertificate(certPEM) == nil {
		return nil, fmt.Errorf("--tls-cert %s: no PEM certificate in it", certFile)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-key: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("--tls-key %s with --tls-cert %s: %w", keyFile, certFile, err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}, nil
}

// dialAddr is the address the CLI, on this machine, dials to reach a
// listener: loopback in place of an unspecified (all-interfaces) host.
func dialAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	host := "::1"
	if tcp.IP.To4() != nil {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// checkLoopback refuses an address that is not on loopback when serving
// without TLS: the token must not cross a network in clear.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen %q: listening on a non-loopback address needs TLS: pass --tls-cert and --tls-key, or use 127.0.0.1 or [::1]", addr)
}

// The token files serve keeps in its data directory.
const (
	tokenName      = "token"
	adminTokenName = "admin-token"
)

// serveTokens are the sidecar's bearer tokens and the files they are in.
type serveTokens struct {
	gateway, gatewayPath string
	// admin is "" when the gateway token is both (a setup from before
	// there were two).
	admin, adminPath string
}

// loadTokens reads the gateway token (loadToken) and the admin token:
// from adminTokenFile, else from data/admin-token. A data directory
// without tokens gets both, generated; one that has only data/token, or
// a --token-file without an admin token, keeps the one token for both.
func loadTokens(data, tokenFile, adminTokenFile string) (serveTokens, error) {
	_, err := os.Stat(filepath.Join(data, tokenName))
	fresh := tokenFile == "" && errors.Is(err, fs.ErrNotExist)
	var t serveTokens
	if t.gateway, t.gatewayPath, err = loadToken(data, tokenFile); err != nil {
		return serveTokens{}, err
	}
	path := filepath.Join(data, adminTokenName)
	if adminTokenFile != "" {
		t.admin, t.adminPath, err = readToken(adminTokenFile, "--admin-token-file", "--admin-token-file "+adminTokenFile+" is empty")
	} else {
		t.admin, t.adminPath, err = readToken(path, "", path+" is empty: delete it to have the one token serve as both")
		switch {
		case errors.Is(err, fs.ErrNotExist) && fresh:
			t.admin, err = generateToken(data, path)
			t.adminPath = path
		case errors.Is(err, fs.ErrNotExist):
			return t, nil
		}
	}
	if err != nil {
		return serveTokens{}, err
	}
	if t.admin == t.gateway {
		return serveTokens{}, fmt.Errorf("the admin token in %s is the gateway token in %s: write another, e.g. openssl rand -hex 32 > %s", t.adminPath, t.gatewayPath, t.adminPath)
	}
	return t, nil
}

// loadToken reads the gateway token from tokenFile, or from data/token,
// which is created with a fresh random token (mode 0600) when absent.
func loadToken(data, tokenFile string) (token, path string, err error) {
	if tokenFile != "" {
		return readToken(tokenFile, "--token-file", "--token-file "+tokenFile+" is empty")
	}
	path = filepath.Join(data, tokenName)
	token, _, err = readToken(path, "", path+" is empty: delete it to have a new token generated")
	if errors.Is(err, fs.ErrNotExist) {
		token, err = generateToken(data, path)
	}
	if err != nil {
		return "", "", err
	}
	return token, path, nil
}

// readToken reads the token in path, held to checkTokenFile. A failure
// to read it is prefixed with flag, when the path came from one; an
// empty file is refused with the message empty.
func readToken(path, flag, empty string) (token, _ string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if flag != "" {
			err = fmt.Errorf("%s: %w", flag, err)
		}
		return "", "", err
	}
	if token = strings.TrimSpace(string(b)); token == "" {
		return "", "", errors.New(empty)
	}
	if err := checkTokenFile(path, token); err != nil {
		return "", "", err
	}
	return token, path, nil
}

// generateToken writes a fresh random token to path (mode 0600, never
// over an existing file), in data (made 0700 if absent).
func generateToken(data, path string) (string, error) {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", err
	}
	raw := make([]byte, tokenBytes)
	rand.Read(raw)
	token := hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		return "", err
	}
	return token, f.Close()
}

// hostToolApproval is the Options.Approve of --approve-host-tools: every
// host-tool call runs; nil without the flag.
func hostToolApproval(approveAll bool) mcpvisor.ApprovalFunc {
	if !approveAll {
		return nil
	}
	return func(context.Context, *mcpvisor.ApprovalRequest) (mcpvisor.ApprovalDecision, error) {
		return mcpvisor.ApprovalDecision{Allow: true}, nil
	}
}

// cmdStdio serves every supervised server as one MCP server on stdin and
// stdout (the gateway's stdio transport), for MCP clients that launch
// their servers.
//
// Nothing can answer an approval inbox here: the host tools that change
// the servers are put to the person at the client instead, as a form
// elicitation showing the whole command line (a client without form
// elicitation is refused them), or, with --approve-host-tools, run
// without asking.
func cmdStdio(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger, stdin io.Reader, stdout io.Writer) error {
	tp, stopTracing := startTracing(ctx, logger)
	defer stopTracing()
	h, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: cfg, DataDir: f.data, Logger: logger, Inbox: true, ReapOrphans: true,
		CallSampling: true, CallRoots: true, Approve: hostToolApproval(f.approveHostTools), AlwaysOn: f.alwaysOn(), SmallCatalogOn: !f.lazy, TracerProvider: tp,
		Journal: f.journalOptions(), Embedder: f.embedder(), EmbedderWeight: float64(f.embeddingsWeight)})
	if err != nil {
		if r := sidecarHolding(ctx, err, f); r != nil {
			logger.Info("stdio: a sidecar holds the journal; relaying the client to its /mcp", "sidecar", r.base, "pid", r.info.PID)
			return bridgeStdio(ctx, r, logger, stdin, stdout)
		}
		return lockHint(err)
	}
	defer h.Close()
	g := gateway.New(h, gateway.Options{Logger: logger, AllowConfigGroup: true, ApproveWithClient: !f.approveHostTools, SettleWait: listSettleWait})
	defer g.Close()
	err = g.ServeStdio(ctx, stdin, stdout)
	if errors.Is(err, context.Canceled) || errors.Is(err, gateway.ErrClosed) {
		err = nil
	}
	return err
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// minToken is the shortest bearer token serve accepts from a file: a
// short one is guessed (a generated one has 64 hex digits).
const minToken = 16

// checkTokenFile refuses a token file another user can read, or one whose
// token is short enough to guess, saying how to fix it.
func checkTokenFile(path, token string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("token file %s is readable by other users (mode %04o): chmod 600 %s", path, perm, path)
	}
	if len(token) < minToken {
		return fmt.Errorf("token file %s holds a %d-character token, at least %d needed: write a long random one, e.g. openssl rand -hex 32 > %s", path, len(token), minToken, path)
	}
	return nil
}

// reloadOnHangup reads the config files again at each SIGHUP and applies
// them (Host.Reload: servers added, changed and removed as the API would),
// saying what changed; a file with an error changes nothing, and is said.
// The function it returns stops listening and waits for a reload under way.
func reloadOnHangup(ctx context.Context, h *mcpvisor.Host, f flags, logger *slog.Logger, stderr io.Writer) func() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-hup:
			case <-ctx.Done():
				return
			}
			files := f.config.String()
			cfg, err := loadConfig(f, logger, stderr)
			if err != nil {
				fmt.Fprintf(stderr, "mcpvisor serve: SIGHUP: %s not reloaded, the servers run on as they were: %v\n", files, err)
				continue
			}
			r, err := h.Reload(ctx, cfg)
			if err != nil {
				fmt.Fprintf(stderr, "mcpvisor serve: SIGHUP: %s: %v\n", files, err)
				continue
			}
			fmt.Fprintf(stderr, "mcpvisor serve: reloaded %s: added %s, changed %s, removed %s, %d unchanged\n", files,
				namesOrNone(r.Added), namesOrNone(r.Changed), namesOrNone(r.Removed), len(r.Unchanged))
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}

// namesOrNone lists names, or says none.
func namesOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// logTransitions logs each server's state changes, as run prints them: a
// server that fails or backs off (a crash loop) at warn, which serve logs
// by default, the others at info. Events beyond what the logger keeps up
// with are dropped, never waited for.
func logTransitions(logger *slog.Logger) (func(mcpvisor.Event), func()) {
	events := make(chan mcpvisor.Event, 256)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			var ev mcpvisor.Event
			select {
			case ev = <-events:
			case <-quit:
				return
			}
			switch ev.State {
			case mcpvisor.StateBackoff, mcpvisor.StateFailed:
				logger.Warn("server "+string(ev.State), "server", ev.Server, "err", ev.Err)
			default:
				logger.Info("server "+string(ev.State), "server", ev.Server)
			}
		}
	}()
	return func(ev mcpvisor.Event) {
			if ev.Kind != mcpvisor.EventState {
				return
			}
			select {
			case events <- ev:
			default:
			}
		}, func() {
			close(quit)
			<-done
		}
}

// listSettleWait is how long a client's first tools/list waits for the
// servers still starting (gateway.Options.SettleWait): a client that lists
// once when it connects (Claude Code's health check, the inspector's CLI)
// then sees every server that starts in that time; list_changed tells it
// of the others.
const listSettleWait = 15 * time.Second

// sidecarHolding is the sidecar that answers on f.data when err says the
// journal is held: stdio then relays its client to the sidecar's /mcp,
// which serves the same servers.
func sidecarHolding(ctx context.Context, err error, f flags) *remote {
	if !errors.Is(err, mcpvisor.ErrJournalLocked) {
		return nil
	}
	r, ferr := findSidecar(ctx, f)
	if ferr != nil {
		return nil
	}
	return r
}
