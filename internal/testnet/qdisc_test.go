//go:build linux

package testnet

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// These run anywhere: they check the parsers on recorded outputs.

func TestParseTC(t *testing.T) {
	jsonOut := `[{"kind":"htb","handle":"1:","root":true,"refcnt":3,"options":{"r2q":10,"default":"0x10","direct_packets_stat":0,"direct_qlen":1000},"bytes":15075618,"packets":12143,"drops":7174,"overlimits":11954,"requeues":1,"backlog":64584,"qlen":52},{"kind":"bfifo","handle":"10:","parent":"1:10","options":{"limit":65536},"bytes":15075618,"packets":12143,"drops":7174,"overlimits":0,"requeues":0,"backlog":64584,"qlen":52}]
`
	textOut := `qdisc htb 1: root refcnt 3 r2q 10 default 0x10 direct_packets_stat 0 direct_qlen 1000
 Sent 15075618 bytes 12143 pkt (dropped 7174, overlimits 11954 requeues 1) 
 backlog 63Kb 52p requeues 1
qdisc bfifo 10: parent 1:10 limit 64Kb
 Sent 15075618 bytes 12143 pkt (dropped 7174, overlimits 0 requeues 0) 
 backlog 63Kb 52p requeues 0
`
	want := QdiscStats{Kind: "htb", Bytes: 15075618, Packets: 12143, Drops: 7174, Overlimits: 11954, Requeues: 1, Backlog: 64584, Qlen: 52}
	got, err := parseTCJSON([]byte(jsonOut))
	if err != nil || got != want {
		t.Errorf("json: %v %v, want %v", got, err, want)
	}
	got, err = parseTCText([]byte(textOut))
	want.Backlog = 63 << 10 // the text rounds
	if err != nil || got != want {
		t.Errorf("text: %v %v, want %v", got, err, want)
	}
	tbf := "qdisc tbf 8001: root refcnt 3 rate 100Mbit burst 16Kb lat 3.93ms \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n"
	got, err = parseTCText([]byte(tbf))
	if err != nil || got != (QdiscStats{Kind: "tbf"}) {
		t.Errorf("text tbf: %v %v", got, err)
	}
	if _, err := parseTCJSON([]byte(`[{"kind":"bfifo","parent":"1:10"}]`)); err == nil {
		t.Error("json without a root qdisc: no error")
	}
}

func TestParseQdiscMsg(t *testing.T) {
	ne := binary.NativeEndian
	attr := func(typ uint16, v []byte) []byte {
		b := make([]byte, 4, 4+len(v)+3)
		ne.PutUint16(b, uint16(4+len(v)))
		ne.PutUint16(b[2:], typ)
		b = append(b, v...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	basic := make([]byte, 16)
	ne.PutUint64(basic, 1500000)
	ne.PutUint32(basic[8:], 1000)
	queue := make([]byte, 20)
	for i, v := range []uint32{7, 9000, 30, 2, 400} { // qlen, backlog, drops, requeues, overlimits
		ne.PutUint32(queue[4*i:], v)
	}
	stats2 := append(attr(tcaStatsBasic, basic), attr(tcaStatsQueue, queue)...)
	msg := make([]byte, sizeofTcMsg)
	msg = append(msg, attr(unix.TCA_KIND, []byte("tbf\x00"))...)
	msg = append(msg, attr(unix.TCA_STATS2|unix.NLA_F_NESTED, stats2)...)
	got, err := parseQdiscMsg(msg)
	want := QdiscStats{Kind: "tbf", Bytes: 1500000, Packets: 1000, Drops: 30, Overlimits: 400, Requeues: 2, Backlog: 9000, Qlen: 7}
	if err != nil || got != want {
		t.Errorf("got %v %v, want %v", got, err, want)
	}
	if _, err := parseQdiscMsg(msg[:sizeofTcMsg]); err == nil {
		t.Error("message without statistics: no error")
	}
}
