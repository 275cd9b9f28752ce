package otel

import (
	"strconv"
	"strings"

	"github.com/erpc-go/erpc"
)

// systemName is rpc.system.name: erpc is a system of its own (the
// conventions let an instrumentation name one outside their list).
const systemName = "erpc"

// other is what the conventions put in rpc.method (and error.type) for a
// value the instrumentation does not recognize.
const other = "_OTHER"

// numCodes is the number of erpc codes with a name (OK to Unauthenticated).
const numCodes = int(erpc.Unauthenticated) + 1

// codeNames are rpc.response.status_code's values: gRPC's canonical names
// of the codes (statuscodes.md), which erpc's codes mean.
var codeNames = [numCodes]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
	"DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
	"RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// statusCode is the rpc.response.status_code of code: gRPC's name for it
// ("OK", "NOT_FOUND", "DEADLINE_EXCEEDED"...), or its number for a code
// erpc does not define.
func statusCode(code erpc.Code) string {
	if int(code) < numCodes {
		return codeNames[code]
	}
	return strconv.Itoa(int(code))
}

// isError reports whether a call that ended with code failed, as the
// side that observed it reports it (span status Error, error.type set):
// for a client every code but OK; for a server only the codes that mean
// the server failed (UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL,
// UNAVAILABLE, DATA_LOSS, as the conventions say for gRPC), not those
// that answer a caller's mistake or state (NOT_FOUND, INVALID_ARGUMENT,
// PERMISSION_DENIED...).
func isError(code erpc.Code, server bool) bool {
	if code == erpc.OK {
		return false
	}
	if !server {
		return true
	}
	switch code {
	case erpc.Unknown, erpc.DeadlineExceeded, erpc.Unimplemented, erpc.Internal, erpc.Unavailable, erpc.DataLoss:
		return true
	}
	return int(code) >= numCodes
}

// rpcMethod is the rpc.method of an erpc method name: the name without
// its leading slash. A generated stub's "/pkg.Service/Method" becomes
// "pkg.Service/Method", the fully qualified form the conventions ask
// for; a plain name such as "Echo" stays "Echo" (erpc has no service
// there: the method is the whole interface). "" is "_OTHER".
func rpcMethod(method string) string {
	m := strings.TrimPrefix(method, "/")
	if m == "" {
		return other
	}
	return m
}
