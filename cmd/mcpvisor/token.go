package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const tokenDetail = "Without a flag, the gateway token: what an MCP client sends to /mcp (Authorization: Bearer TOKEN).\n" +
	"The tokens are the running sidecar's (the files its note names), else those a sidecar left in --data."

// cmdToken prints the sidecar's gateway token, its admin token (--admin),
// or the inbox page's address signed in with the admin token (--url).
func cmdToken(ctx context.Context, e *env) error {
	if len(e.args) > 0 {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("token: unexpected argument %q%s", e.args[0], seeHelp("token"))}
	}
	r, err := sidecarOn(ctx, e.f)
	if err != nil {
		return err
	}
	gatewayPath, adminPath := filepath.Join(e.f.data, tokenName), filepath.Join(e.f.data, adminTokenName)
	if r != nil {
		gatewayPath, adminPath = r.info.TokenFile, r.info.AdminTokenFile
	} else if e.f.url {
		return fmt.Errorf("token --url: no sidecar answers on %s: start one with mcpvisor serve", e.f.data)
	}
	path := gatewayPath
	if e.f.admin || e.f.url {
		// No admin token file: the gateway token is both.
		if _, err := os.Stat(adminPath); adminPath != "" && err == nil {
			path = adminPath
		}
	}
	tok, err := readTokenFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("token: no token in %s: mcpvisor serve --data %s makes one", e.f.data, e.f.data)
	}
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	if e.f.url {
		_, err = fmt.Fprintf(e.stdout, "%s/ui/#token=%s\n", r.base, tok)
		return err
	}
	_, err = fmt.Fprintln(e.stdout, tok)
	return err
}

// readTokenFile is the token in path ("" paths do not exist).
func readTokenFile(path string) (string, error) {
	if path == "" {
		return "", fs.ErrNotExist
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return tok, nil
}
