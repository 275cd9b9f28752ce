package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"testing"
)

// benchSizes are the payloads benchmarked: a small call and a full packet.
var benchSizes = []int{32, 1440}

func BenchmarkSeal(b *testing.B) {
	for _, st := range testSuites {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%dB", st.name, size), func(b *testing.B) {
				s, _ := pair(b, st.id, 41, LevelApplication)
				pt := payloadFor(0, size)
				pkt := make([]byte, 0, size+Overhead)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					pkt = s.Seal(pkt[:0], 9, pt)
				}
			})
		}
	}
}

// BenchmarkOpen opens fresh packets (a replay would be dropped early),
// sealed in batches outside the timer.
func BenchmarkOpen(b *testing.B) {
	const batch = 1024
	for _, st := range testSuites {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%dB", st.name, size), func(b *testing.B) {
				s, o := pair(b, st.id, 42, LevelApplication)
				pt := payloadFor(0, size)
				pkts := make([][]byte, batch)
				for i := range pkts {
					pkts[i] = make([]byte, 0, size+Overhead)
				}
				out := make([]byte, 0, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				i := batch
				for b.Loop() {
					if i == batch {
						b.StopTimer()
						for j := range pkts {
							pkts[j] = s.Seal(pkts[j][:0], 9, pt)
						}
						i = 0
						b.StartTimer()
					}
					if _, err := o.Open(out[:0], pkts[i]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkGCMBaseline is crypto/cipher's AES-GCM Seal alone on the same
// sizes: Seal's cost above it is this package's (header, nonce, limits).
func BenchmarkGCMBaseline(b *testing.B) {
	for _, keyLen := range []int{16, 32} {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("AES%dGCM/%dB", keyLen*8, size), func(b *testing.B) {
				block, _ := aes.NewCipher(make([]byte, keyLen))
				aead, _ := cipher.NewGCM(block)
				pt := payloadFor(0, size)
				nonce := make([]byte, ivLen)
				out := make([]byte, 0, size+TagLen)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					out = aead.Seal(out[:0], nonce, pt, nil)
				}
			})
		}
	}
}
