package schema

import (
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxDetail bounds the failures a Mismatch lists.
const maxDetail = 20

// Mismatch is a document that does not match its schema.
type Mismatch struct {
	// Detail has one line per failure, "- at '/path': message", nested
	// under a failed anyOf and the like, top-level failures sorted; past
	// 20 lines, a last one says how many more.
	Detail string
}

func (m *Mismatch) Error() string {
	return "document does not match its schema:\n" + m.Detail
}

// validationDetail writes a validation error as the library's tree, one
// failure a line with the instance location it concerns, without the
// library's header line:
//
//   - at '/a': got string, want integer
//   - at (root): 'anyOf' failed
//   - at (root): got boolean, want string
func validationDetail(verr *jsonschema.ValidationError) string {
	lines := strings.Split(verr.Error(), "\n")
	if len(lines) > 1 && strings.HasPrefix(lines[0], "jsonschema validation failed") {
		lines = lines[1:]
	}
	lines = sortTopLevel(lines)
	if len(lines) > maxDetail {
		lines = append(lines[:maxDetail], fmt.Sprintf("- and %d more", len(lines)-maxDetail))
	}
	for i, l := range lines {
		l = strings.Replace(l, "at '':", "at (root):", 1)
		lines[i] = strings.ReplaceAll(l, schemaBase, "")
	}
	return strings.Join(lines, "\n")
}

// sortTopLevel orders the tree's top-level failures, each with the lines
// nested under it: the library reports sibling properties in map order, and
// the same result must always read the same.
func sortTopLevel(lines []string) []string {
	var blocks [][]string
	for _, l := range lines {
		if len(blocks) == 0 || !strings.HasPrefix(l, " ") {
			blocks = append(blocks, nil)
		}
		blocks[len(blocks)-1] = append(blocks[len(blocks)-1], l)
	}
	slices.SortStableFunc(blocks, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	out := make([]string, 0, len(lines))
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out
}
