package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"mime"
	"path"

	"github.com/gofiber/fiber/v2"
)

//go:embed assets/*
var assetFiles embed.FS

// assetPrefix is where the dashboard's stylesheet and script are served.
const assetPrefix = "/assets/"

// assetVersions are the content hashes of the assets: pages link to
// /assets/<name>?v=<hash>, so that a new release is fetched at once and
// an unchanged asset is cached for a year.
var assetVersions = func() map[string]string {
	out := map[string]string{}
	entries, err := assetFiles.ReadDir("assets")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, _ := assetFiles.ReadFile("assets/" + e.Name())
		sum := sha256.Sum256(b)
		out[e.Name()] = hex.EncodeToString(sum[:6])
	}
	return out
}()

func assetURL(name string) string {
	return assetPrefix + name + "?v=" + assetVersions[name]
}

func serveAsset(c *fiber.Ctx) error {
	name := c.Params("name")
	v, ok := assetVersions[name]
	if !ok {
		return fiber.ErrNotFound
	}
	b, _ := assetFiles.ReadFile("assets/" + name)
	c.Set(fiber.HeaderContentType, mime.TypeByExtension(path.Ext(name)))
	if c.Query("v") == v {
		c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	} else {
		c.Set(fiber.HeaderCacheControl, "no-cache")
	}
	return c.Send(b)
}
