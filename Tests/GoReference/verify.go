// An independent check of ledgerd's transparency log with Go's reference implementation of signed notes and
// Merkle tree tiles (golang.org/x/mod/sumdb/note and sumdb/tlog, Debian's golang-golang-x-mod-dev): reads a JSON
// fixture written by TransparencyGoReferenceTests (a signed checkpoint, the log's verifier key, every tile of the
// tree as served under /log/tile/, and served inclusion and consistency proofs), verifies the checkpoint's
// signature, verifies every tile against the checkpoint's root while reading hashes through them, checks each
// proof with tlog.CheckRecord / tlog.CheckTree and compares it with the proof Go builds from the tiles. Prints
// "ok" and exits 0, or prints what failed and exits 1.
//
// Run: GO111MODULE=off GOPATH=/usr/share/gocode go run verify.go FIXTURE.json
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type fixture struct {
	VerifierKey string            `json:"verifier_key"`
	Checkpoint  string            `json:"checkpoint"`
	Tiles       map[string]string `json:"tiles"`
	Inclusion   []struct {
		Position int64    `json:"position"`
		TreeSize int64    `json:"tree_size"`
		LeafData string   `json:"leaf_data"`
		Proof    []string `json:"proof"`
	} `json:"inclusion"`
	Consistency []struct {
		From     int64    `json:"from"`
		To       int64    `json:"to"`
		Proof    []string `json:"proof"`
		FromRoot string   `json:"from_root"`
	} `json:"consistency"`
}

type tiles map[string]string

func (t tiles) Height() int { return 8 }

func (t tiles) ReadTiles(list []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(list))
	for i, tile := range list {
		// Go's paths carry the tile height (tile/8/L/N); tlog-tiles' do not (tile/L/N).
		path := "tile/" + strings.TrimPrefix(tile.Path(), "tile/8/")
		data, ok := t[path]
		if !ok {
			return nil, fmt.Errorf("tile %s was not served", path)
		}
		bytes, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, err
		}
		out[i] = bytes
	}
	return out, nil
}

func (t tiles) SaveTiles(list []tlog.Tile, data [][]byte) {}

func hash(text string) tlog.Hash {
	var h tlog.Hash
	bytes, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(bytes) != tlog.HashSize {
		fail("not a base64 hash: %q", text)
	}
	copy(h[:], bytes)
	return h
}

func hashes(texts []string) []tlog.Hash {
	out := make([]tlog.Hash, len(texts))
	for i, text := range texts {
		out[i] = hash(text)
	}
	return out
}

func fail(format string, args ...interface{}) {
	fmt.Printf(format+"\n", args...)
	os.Exit(1)
}

func main() {
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("%v", err)
	}
	var f fixture
	if err := json.Unmarshal(raw, &f); err != nil {
		fail("fixture: %v", err)
	}
	verifier, err := note.NewVerifier(f.VerifierKey)
	if err != nil {
		fail("verifier key: %v", err)
	}
	opened, err := note.Open([]byte(f.Checkpoint), note.VerifierList(verifier))
	if err != nil {
		fail("checkpoint signature: %v", err)
	}
	lines := strings.Split(opened.Text, "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" {
		fail("checkpoint text: %q", opened.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		fail("checkpoint size: %v", err)
	}
	root := hash(lines[2])
	reader := tlog.TileHashReader(tlog.Tree{N: size, Hash: root}, tiles(f.Tiles))
	treeHash, err := tlog.TreeHash(size, reader)
	if err != nil || treeHash != root {
		fail("tree hash from the tiles: %v %v (root %v)", err, treeHash, root)
	}
	for _, p := range f.Inclusion {
		leaf, err := base64.StdEncoding.DecodeString(p.LeafData)
		if err != nil {
			fail("leaf data: %v", err)
		}
		if p.TreeSize != size {
			fail("inclusion proof for size %d, checkpoint of %d", p.TreeSize, size)
		}
		proof := tlog.RecordProof(hashes(p.Proof))
		if err := tlog.CheckRecord(proof, size, root, p.Position-1, tlog.RecordHash(leaf)); err != nil {
			fail("inclusion of position %d: %v", p.Position, err)
		}
		mine, err := tlog.ProveRecord(size, p.Position-1, reader)
		if err != nil || fmt.Sprint(mine) != fmt.Sprint(proof) {
			fail("Go's inclusion proof of position %d differs: %v", p.Position, err)
		}
	}
	for _, p := range f.Consistency {
		if p.To != size {
			fail("consistency proof to size %d, checkpoint of %d", p.To, size)
		}
		proof := tlog.TreeProof(hashes(p.Proof))
		if err := tlog.CheckTree(proof, size, root, p.From, hash(p.FromRoot)); err != nil {
			fail("consistency %d -> %d: %v", p.From, p.To, err)
		}
		mine, err := tlog.ProveTree(size, p.From, reader)
		if err != nil || fmt.Sprint(mine) != fmt.Sprint(proof) {
			fail("Go's consistency proof %d -> %d differs: %v", p.From, p.To, err)
		}
	}
	fmt.Println("ok")
}
