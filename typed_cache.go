package erpc

import (
	"sync"
	"sync/atomic"

	"github.com/erpc-go/erpc/codec"
)

// typedMethod is what Invoke needs to know of a method beyond its name:
// its ID on the wire, which hashes the name with the types' names, and
// those names for an Unimplemented error.
type typedMethod struct {
	name      string
	id        uint32
	typed     bool // the ID includes type names
	req, resp string
}

type typedKey struct{ method, req, resp string }

// typedMethods caches typed IDs, so that a call does not hash (and build)
// the long name each time: a map replaced whole on each addition, read
// without a lock. The set of methods a program calls is small and fixed.
var typedMethods struct {
	mu sync.Mutex // writers
	m  atomic.Pointer[map[typedKey]typedMethod]
}

func typedMethodOf(method string, reqCodec codec.Codec, req any, respCodec codec.Codec, resp any) typedMethod {
	k := typedKey{method, typeName(reqCodec, req), typeName(respCodec, resp)}
	if m := typedMethods.m.Load(); m != nil {
		if tm, ok := (*m)[k]; ok {
			return tm
		}
	}
	tm := typedMethod{name: method, id: typedIDOf(method, k.req, k.resp), typed: k.req != "" || k.resp != "",
		req: k.req, resp: k.resp}
	typedMethods.mu.Lock()
	defer typedMethods.mu.Unlock()
	old := typedMethods.m.Load()
	if lenOf(old) >= maxTypedMethods {
		return tm // a program that calls names without end (a proxy): no cache
	}
	next := make(map[typedKey]typedMethod, 1+lenOf(old))
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	next[k] = tm
	typedMethods.m.Store(&next)
	return tm
}

// maxTypedMethods bounds the cache (and the cost of copying it).
const maxTypedMethods = 1024

func lenOf(m *map[typedKey]typedMethod) int {
	if m == nil {
		return 0
	}
	return len(*m)
}
