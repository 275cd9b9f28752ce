//go:build race

package cc

// raceEnabled: the race detector slows the model down tenfold or more, so
// the model tests run fewer seeds under it (test.sh runs every package with
// -race; the full set runs without).
const raceEnabled = true
