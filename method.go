package erpc

// MethodID is how a method is named on the wire: the 32-bit FNV-1a hash of
// its name. Clients need no registry or handshake to find a method;
// servers refuse to register two names with the same ID, and
// protoc-gen-go-erpc refuses to generate a service with two.
func MethodID(name string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h ^= uint32(name[i])
		h *= 16777619
	}
	return h
}

func methodID(name string) uint32 { return MethodID(name) }
