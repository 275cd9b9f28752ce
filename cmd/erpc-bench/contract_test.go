package main

// contractFields are the JSON names BENCH-CONTRACT.md fixes: every row of
// every scenario has them.
var contractFields = []string{"scenario", "system", "transport", "size", "resp_size", "concurrency",
	"sessions", "duration_s", "ops", "errors", "qps", "gbps", "p50_us", "p90_us", "p99_us", "p999_us",
	"allocs_per_op", "cores"}
