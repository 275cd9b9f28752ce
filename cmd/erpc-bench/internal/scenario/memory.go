package scenario

import (
	"fmt"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
)

// Memory after a load (issue 33: receive memory follows load). A fresh
// server's resident set is read, a 64 KiB load over 10 sessions with 32
// calls in flight runs for the scenario's duration, and the resident set
// is read as the load ends and again -after-load (10 s) later, as the
// operating system sees it (no collection forced first). The row is the
// load's measurement with the three figures and their ratio.

// memoryAfterLoad adds one row for system.
func (b *Bench) memoryAfterLoad(system string) error {
	p, err := b.start(system, 0)
	if err != nil {
		return err
	}
	defer p.Stop()
	time.Sleep(100 * time.Millisecond)
	before, err := p.Srv.RSS()
	if err != nil {
		return fmt.Errorf("server memory: %w", err)
	}
	r := b.Measure(p, meter.Point{Size: 64 << 10, Resp: 64 << 10, Conc: 32, Sessions: 10,
		Warmup: b.Cfg.Warmup, Dur: b.Cfg.Dur})
	loaded, err := p.Srv.RSS()
	if err != nil {
		return fmt.Errorf("server memory: %w", err)
	}
	time.Sleep(b.Cfg.AfterLoad)
	after, err := p.Srv.RSS()
	if err != nil {
		return fmt.Errorf("server memory: %w", err)
	}
	if r.Extra == nil {
		r.Extra = map[string]any{}
	}
	r.Extra["phase"] = "after_load"
	r.Extra["rss_before_load_bytes"] = before
	r.Extra["rss_loaded_bytes"] = loaded
	r.Extra["rss_after_bytes"] = after
	r.Extra["after_load_s"] = b.Cfg.AfterLoad.Seconds()
	if before > 0 {
		r.Extra["rss_after_over_before"] = float64(after) / float64(before)
	}
	b.Out.Add(r)
	return nil
}
