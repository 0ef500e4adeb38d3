// Command protorename gives the copy's protobuf files names of their own, so
// a program that links both this copy and upstream protoactor-go does not
// panic at init when both register "actor.proto" and "actor.PID" in
// google.golang.org/protobuf's global registry (mcpvisor patch 16).
//
// It rewrites each generated .pb.go file in place: the raw descriptor is
// decoded, its package gets the prefix "mcpvisor.protoactor.", its path the
// prefix "mcpvisor/protoactor/", references to the copy's own files and
// types follow, and go_package names the copy's import path. Go package
// and type names are left alone. The gRPC service names in *_grpc.pb.go and
// the generated comments follow the same renaming. Running it twice changes
// nothing.
//
// From internal/protoactor, after refreshing the copy from upstream:
//
//	go run ./internal/protorename
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

const (
	packagePrefix = "mcpvisor.protoactor."
	pathPrefix    = "mcpvisor/protoactor/"
	importPath    = "github.com/mcpvisor/mcpvisor/internal/protoactor"
)

func main() {
	log.SetFlags(0)
	check := flag.Bool("check", false, "report files that would change and exit 1, writing nothing")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	changed, err := Run(root, !*check)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range changed {
		fmt.Println(f)
	}
	if *check && len(changed) > 0 {
		os.Exit(1)
	}
}

// Run renames every .pb.go file under root (the internal/protoactor
// directory) and returns the files whose content changed. With write false
// it only reports them.
func Run(root string, write bool) ([]string, error) {
	var pbFiles, grpcFiles []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return nil
		case strings.HasSuffix(path, "_grpc.pb.go"):
			grpcFiles = append(grpcFiles, path)
		case strings.HasSuffix(path, ".pb.go"):
			pbFiles = append(pbFiles, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	files := make(map[string]*generated, len(pbFiles))
	for _, path := range pbFiles {
		g, err := parseGenerated(path)
		if err != nil {
			return nil, err
		}
		files[path] = g
	}
	// The copy's own proto packages and file paths, old and renamed, so a
	// reference to one of them is renamed wherever it appears and a
	// reference to anything else (google/protobuf/any.proto) is not.
	r := renamer{packages: map[string]string{}, paths: map[string]string{}}
	for _, g := range files {
		r.addFile(g.desc.GetPackage(), g.desc.GetName())
	}

	var changed []string
	for _, path := range sortedKeys(files) {
		g := files[path]
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return nil, err
		}
		out, err := g.rewrite(r, importPath+"/"+filepath.ToSlash(dir))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if ok, err := update(path, g.src, out, write); err != nil {
			return nil, err
		} else if ok {
			changed = append(changed, path)
		}
	}
	for _, path := range grpcFiles {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out, err := format.Source(r.rewriteGRPC(src))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if ok, err := update(path, src, out, write); err != nil {
			return nil, err
		} else if ok {
			changed = append(changed, path)
		}
	}
	return changed, nil
}

func update(path string, old, new []byte, write bool) (bool, error) {
	if bytes.Equal(old, new) {
		return false, nil
	}
	if write {
		return true, os.WriteFile(path, new, 0o644)
	}
	return true, nil
}

// renamer maps the copy's proto packages and file paths to their new names;
// both directions are known so that renamed input maps to itself.
type renamer struct {
	packages map[string]string // old or new package -> new package
	paths    map[string]string // old or new path -> new path
}

func (r renamer) addFile(pkg, path string) {
	newPkg := packagePrefix + strings.TrimPrefix(pkg, packagePrefix)
	newPath := pathPrefix + strings.TrimPrefix(path, pathPrefix)
	oldPkg := strings.TrimPrefix(pkg, packagePrefix)
	oldPath := strings.TrimPrefix(path, pathPrefix)
	r.packages[oldPkg], r.packages[newPkg] = newPkg, newPkg
	r.paths[oldPath], r.paths[newPath] = newPath, newPath
}

// fullName renames a full name ("actor.PID") if its package is one of the
// copy's; a leading dot (a type reference) is kept.
func (r renamer) fullName(name string) string {
	dot := strings.HasPrefix(name, ".")
	bare := strings.TrimPrefix(name, ".")
	// Longest package first: "mcpvisor.protoactor.actor" before "actor".
	best := ""
	for old := range r.packages {
		if (bare == old || strings.HasPrefix(bare, old+".")) && len(old) > len(best) {
			best = old
		}
	}
	if best == "" {
		return name
	}
	renamed := r.packages[best] + strings.TrimPrefix(bare, best)
	if dot {
		return "." + renamed
	}
	return renamed
}

// commentName matches a full name in a generated comment ("// 4:
// remote.MessageBatch.targets:type_name -> actor.PID").
var commentName = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_.]*`)

func (r renamer) comment(c string) string {
	return commentName.ReplaceAllStringFunc(c, func(name string) string {
		if !strings.Contains(name, ".") {
			return name
		}
		return r.fullName(name)
	})
}

// rewriteGRPC renames the service names and the source file in a
// protoc-gen-go-grpc file, which carries them as strings.
func (r renamer) rewriteGRPC(src []byte) []byte {
	quoted := regexp.MustCompile(`"(/?)([A-Za-z_][A-Za-z0-9_.]*\.[A-Za-z_][A-Za-z0-9_]*)(/[A-Za-z0-9_]*)?"`)
	src = quoted.ReplaceAllFunc(src, func(m []byte) []byte {
		s := quoted.FindSubmatch(m)
		if p, ok := r.paths[string(s[2])]; ok && len(s[1]) == 0 && len(s[3]) == 0 {
			return []byte(strconv.Quote(p))
		}
		return []byte(`"` + string(s[1]) + r.fullName(string(s[2])) + string(s[3]) + `"`)
	})
	return r.rewriteSource(src)
}

// rewriteSource renames the file named in the "// source:" header line.
func (r renamer) rewriteSource(src []byte) []byte {
	header := regexp.MustCompile(`(?m)^// source: (\S+)$`)
	return header.ReplaceAllFunc(src, func(m []byte) []byte {
		old := string(header.FindSubmatch(m)[1])
		if p, ok := r.paths[old]; ok {
			return []byte("// source: " + p)
		}
		return m
	})
}

// generated is one protoc-gen-go file: its source and decoded descriptor.
type generated struct {
	src        []byte
	desc       *descriptorpb.FileDescriptorProto
	start, end int // byte offsets of the raw descriptor's value
}

func parseGenerated(path string) (*generated, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var value ast.Expr
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || value != nil {
			return value == nil
		}
		for i, name := range spec.Names {
			if strings.HasSuffix(name.Name, "_rawDesc") && i < len(spec.Values) {
				value = spec.Values[i]
			}
		}
		return false
	})
	if value == nil {
		return nil, fmt.Errorf("%s: no raw descriptor (file_*_rawDesc) found", path)
	}
	raw, err := evalBytes(value)
	if err != nil {
		return nil, fmt.Errorf("%s: raw descriptor: %w", path, err)
	}
	desc := &descriptorpb.FileDescriptorProto{}
	if err := proto.Unmarshal(raw, desc); err != nil {
		return nil, fmt.Errorf("%s: raw descriptor: %w", path, err)
	}
	return &generated{
		src:   src,
		desc:  desc,
		start: fset.Position(value.Pos()).Offset,
		end:   fset.Position(value.End()).Offset,
	}, nil
}

// evalBytes evaluates the raw descriptor's literal: a []byte{0x0a, ...}
// (protoc-gen-go before 1.36) or a concatenation of string literals (since).
func evalBytes(e ast.Expr) ([]byte, error) {
	switch e := e.(type) {
	case *ast.CompositeLit:
		out := make([]byte, 0, len(e.Elts))
		for _, elt := range e.Elts {
			lit, ok := elt.(*ast.BasicLit)
			if !ok || lit.Kind != token.INT {
				return nil, fmt.Errorf("unexpected element %T", elt)
			}
			v, err := strconv.ParseUint(lit.Value, 0, 8)
			if err != nil {
				return nil, err
			}
			out = append(out, byte(v))
		}
		return out, nil
	case *ast.BinaryExpr:
		x, err := evalBytes(e.X)
		if err != nil {
			return nil, err
		}
		y, err := evalBytes(e.Y)
		if err != nil {
			return nil, err
		}
		return append(x, y...), nil
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return nil, fmt.Errorf("unexpected literal %s", e.Value)
		}
		s, err := strconv.Unquote(e.Value)
		return []byte(s), err
	}
	return nil, fmt.Errorf("unexpected expression %T", e)
}

func (g *generated) rewrite(r renamer, goPackage string) ([]byte, error) {
	d := proto.Clone(g.desc).(*descriptorpb.FileDescriptorProto)
	d.Name = proto.String(r.paths[d.GetName()])
	d.Package = proto.String(r.packages[d.GetPackage()])
	for i, dep := range d.Dependency {
		if p, ok := r.paths[dep]; ok {
			d.Dependency[i] = p
		}
	}
	if d.Options == nil {
		d.Options = &descriptorpb.FileOptions{}
	}
	d.Options.GoPackage = proto.String(goPackage)
	for _, m := range d.MessageType {
		r.message(m)
	}
	for _, x := range d.Extension {
		r.field(x)
	}
	for _, s := range d.Service {
		for _, m := range s.Method {
			m.InputType = proto.String(r.fullName(m.GetInputType()))
			m.OutputType = proto.String(r.fullName(m.GetOutputType()))
		}
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(d)
	if err != nil {
		return nil, err
	}

	var out bytes.Buffer
	out.Write(g.src[:g.start])
	writeRaw(&out, raw, g.src[g.start:g.end])
	out.Write(g.src[g.end:])
	src := r.rewriteSource(out.Bytes())
	src = r.rewriteComments(src)
	return format.Source(src)
}

func (r renamer) message(m *descriptorpb.DescriptorProto) {
	for _, f := range m.Field {
		r.field(f)
	}
	for _, x := range m.Extension {
		r.field(x)
	}
	for _, n := range m.NestedType {
		r.message(n)
	}
}

func (r renamer) field(f *descriptorpb.FieldDescriptorProto) {
	if f.TypeName != nil {
		f.TypeName = proto.String(r.fullName(f.GetTypeName()))
	}
	if f.Extendee != nil {
		f.Extendee = proto.String(r.fullName(f.GetExtendee()))
	}
}

// writeRaw writes raw in the form the original literal had: a byte slice
// literal sixteen to a line, or string literals.
func writeRaw(out *bytes.Buffer, raw, original []byte) {
	if !bytes.HasPrefix(original, []byte("[]byte{")) {
		// protoc-gen-go 1.36 and later: a string constant. It splits the
		// string at field boundaries for reading; one literal decodes the
		// same.
		out.WriteString(strconv.Quote(string(raw)))
		return
	}
	out.WriteString("[]byte{\n")
	for i := 0; i < len(raw); i += 16 {
		line := raw[i:min(i+16, len(raw))]
		for j, b := range line {
			if j > 0 {
				out.WriteByte(' ')
			}
			fmt.Fprintf(out, "0x%02x,", b)
		}
		out.WriteByte('\n')
	}
	out.WriteString("}")
}

// rewriteComments renames the full names in the generated comments of the
// goTypes and depIdxs tables ("(*PID)(nil), // 0: actor.PID"). Only the
// comment is touched: "actor.PID" before it is the Go package's type.
func (r renamer) rewriteComments(src []byte) []byte {
	line := regexp.MustCompile(`(?m)(// \d+: )(.*)$`)
	return line.ReplaceAllFunc(src, func(m []byte) []byte {
		s := line.FindSubmatch(m)
		return []byte(string(s[1]) + r.comment(string(s[2])))
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
