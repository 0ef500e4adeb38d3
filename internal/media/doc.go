// Package media keeps the inline media of tool results out of a model's
// context: a Store decodes each image, audio and blob resource item, writes
// it under a generated name to a directory, and renders the result as
// markdown that links to the files by URL.
//
//	store := media.New(filepath.Join(dataDir, "media"), "", 0)
//	if media.HasMedia(content) {
//		markdown, files, err := store.Render(content, structured)
//		...
//	}
//
// ValidName and ContentType are what a handler serving the directory
// needs: they accept only names a Store generates.
package media
