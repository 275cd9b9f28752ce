package erpc

import (
	"strings"
	"time"
)

// SetEjectTiming shortens the ejections of the Clients made after it (for
// tests): ejected after `after` failures in a row, for base (doubling).
// It returns the restore.
func SetEjectTiming(after int, base time.Duration) (restore func()) {
	old := outlierConfig
	outlierConfig.ConsecutiveFailures, outlierConfig.BaseEjection = after, base
	return func() { outlierConfig = old }
}

// SetRetryBudget sets the retry budget of the Clients made after it (for
// tests); it returns the restore.
func SetRetryBudget(ratio, minPerSecond float64) (restore func()) {
	old := retryBudgetConfig
	retryBudgetConfig.Ratio, retryBudgetConfig.MinPerSecond = ratio, minPerSecond
	return func() { retryBudgetConfig = old }
}

// SimulateServerFaults makes a handler's error answers whose message
// starts with prefix count, at the Clients, as failures of the server (a
// broken replica), not as the handler's own answers: they are retried
// (Idempotent) and eject. It returns the restore.
func SimulateServerFaults(prefix string) (restore func()) {
	old := serverFaultForTest
	serverFaultForTest = func(msg string) bool { return strings.HasPrefix(msg, prefix) }
	return func() { serverFaultForTest = old }
}
