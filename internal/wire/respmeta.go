package wire

// A response whose packets carry FlagMetadata starts with two metadata
// blocks, each in the request's format (see AppendMetadata): the
// response's headers, then its trailers (what gRPC sends after the
// message, with the status). Either may be empty (the two bytes 01 00);
// a response with neither carries no flag and no block. The message, or
// an error answer's payload, follows the trailers.
//
// The two blocks together are at most MaxMetadata bytes, so a server
// cannot make a client parse or keep more than that per call.

// ResponseMetadataSize is the length of the two blocks
// AppendResponseMetadata writes.
func ResponseMetadataSize(hkeys []string, header map[string][]string, tkeys []string, trailer map[string][]string) int {
	return BlockSize(hkeys, header) + BlockSize(tkeys, trailer)
}

// AppendResponseMetadata appends a response's headers and trailers to b,
// each block's keys in the order given.
func AppendResponseMetadata(b []byte, hkeys []string, header map[string][]string, tkeys []string, trailer map[string][]string) []byte {
	return AppendMetadata(AppendMetadata(b, hkeys, header), tkeys, trailer)
}

// ParseResponseMetadata splits a response that carries FlagMetadata into
// its headers (each key's values given to header), its trailers (to
// trailer) and the rest. It rejects anything malformed (ErrMetadata) and
// blocks over MaxMetadata together (ErrMetadataTooLarge); header may have
// been called by then.
func ParseResponseMetadata(msg []byte, header, trailer func(key string, values []string)) (rest []byte, err error) {
	rest, err = ParseMetadata(msg, header)
	if err != nil {
		return nil, err
	}
	rest, err = ParseMetadata(rest, trailer)
	if err != nil {
		return nil, err
	}
	if len(msg)-len(rest) > MaxMetadata {
		return nil, ErrMetadataTooLarge
	}
	return rest, nil
}
