// Package report turns results into output: the JSON row (Record; the
// fields up to "cores" are the benchmark contract's), the coro_rpc-style
// table of the grid scenarios with its progress bar (Output), the grid
// scenarios' SVG plot (GridPlotSVG) and the SVG and number-formatting
// helpers the scenarios' own tables and plots share.
//
// It does not measure and does not decide what a scenario reports: the
// slo, incast and multipath scenarios print their own tables and plots
// (with the helpers here) in their packages.
package report
