package erpc

import "time"

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
