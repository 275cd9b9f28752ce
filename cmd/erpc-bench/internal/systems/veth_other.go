//go:build !linux

package systems

func inClientNS(fn func() error) error { return fn() }
