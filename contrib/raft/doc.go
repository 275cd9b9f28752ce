// Package raft is a hashicorp/raft Transport over erpc-go.
package raft
