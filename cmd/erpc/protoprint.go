package main

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// describeDescriptor prints d as .proto text, after a comment that names
// it and its file. Types are written by their full names. (Comments of
// the original .proto are not in the descriptors a Go program carries.)
func describeDescriptor(d protoreflect.Descriptor) string { return describeNoted(d, nil) }

// describeNoted is describeDescriptor with a note after each method that
// note gives one for (nil: none).
func describeNoted(d protoreflect.Descriptor, note func(protoreflect.MethodDescriptor) string) string {
	p := &printer{note: note}
	fmt.Fprintf(&p.b, "// %s, in %s\n", d.FullName(), d.ParentFile().Path())
	switch d := d.(type) {
	case protoreflect.MessageDescriptor:
		p.message(d, 0)
	case protoreflect.EnumDescriptor:
		p.enum(d, 0)
	case protoreflect.ServiceDescriptor:
		p.service(d)
	case protoreflect.MethodDescriptor:
		p.line(0, "%s%s", rpcLine(d), p.noteOf(d))
	case protoreflect.FieldDescriptor:
		if d.IsExtension() {
			p.line(0, "extend %s {", d.ContainingMessage().FullName())
			p.field(d, 1)
			p.line(0, "}")
		} else {
			p.field(d, 0)
		}
	case protoreflect.EnumValueDescriptor:
		p.line(0, "%s = %d;", d.Name(), d.Number())
	case protoreflect.OneofDescriptor:
		p.oneof(d, 0)
	default:
		p.line(0, "%s", d.FullName())
	}
	return p.b.String()
}

// rpcLine is a method as a service declares it.
func rpcLine(m protoreflect.MethodDescriptor) string {
	stream := func(on bool) string {
		if on {
			return "stream "
		}
		return ""
	}
	return fmt.Sprintf("rpc %s(%s%s) returns (%s%s);", m.Name(),
		stream(m.IsStreamingClient()), m.Input().FullName(), stream(m.IsStreamingServer()), m.Output().FullName())
}

type printer struct {
	b    strings.Builder
	note func(protoreflect.MethodDescriptor) string
}

// noteOf is the note after method m, with its separator; "" if none.
func (p *printer) noteOf(m protoreflect.MethodDescriptor) string {
	if p.note == nil {
		return ""
	}
	if n := p.note(m); n != "" {
		return "  // " + n
	}
	return ""
}

func (p *printer) line(depth int, format string, args ...any) {
	p.b.WriteString(strings.Repeat("  ", depth))
	fmt.Fprintf(&p.b, format, args...)
	p.b.WriteByte('\n')
}

func (p *printer) message(m protoreflect.MessageDescriptor, depth int) {
	p.line(depth, "message %s {", m.Name())
	for i := range m.Enums().Len() {
		p.enum(m.Enums().Get(i), depth+1)
	}
	for i := range m.Messages().Len() {
		if nested := m.Messages().Get(i); !nested.IsMapEntry() {
			p.message(nested, depth+1)
		}
	}
	printed := map[protoreflect.OneofDescriptor]bool{}
	for i := range m.Fields().Len() {
		f := m.Fields().Get(i)
		if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
			if !printed[o] {
				printed[o] = true
				p.oneof(o, depth+1)
			}
			continue
		}
		p.field(f, depth+1)
	}
	for i := range m.Extensions().Len() {
		x := m.Extensions().Get(i)
		p.line(depth+1, "extend %s {", x.ContainingMessage().FullName())
		p.field(x, depth+2)
		p.line(depth+1, "}")
	}
	if r := m.ReservedRanges(); r.Len() > 0 {
		var parts []string
		for i := range r.Len() {
			lo, hi := r.Get(i)[0], r.Get(i)[1]-1 // the range's end is exclusive
			if lo == hi {
				parts = append(parts, fmt.Sprint(lo))
			} else {
				parts = append(parts, fmt.Sprintf("%d to %d", lo, hi))
			}
		}
		p.line(depth+1, "reserved %s;", strings.Join(parts, ", "))
	}
	p.line(depth, "}")
}

func (p *printer) oneof(o protoreflect.OneofDescriptor, depth int) {
	p.line(depth, "oneof %s {", o.Name())
	for i := range o.Fields().Len() {
		p.field(o.Fields().Get(i), depth+1)
	}
	p.line(depth, "}")
}

func (p *printer) field(f protoreflect.FieldDescriptor, depth int) {
	label := ""
	switch {
	case f.IsMap():
	case f.IsList():
		label = "repeated "
	case f.Cardinality() == protoreflect.Required:
		label = "required "
	case f.HasOptionalKeyword():
		label = "optional "
	}
	opts := ""
	if f.HasDefault() {
		def := f.Default().Interface()
		switch f.Kind() {
		case protoreflect.EnumKind:
			def = f.DefaultEnumValue().Name()
		case protoreflect.StringKind, protoreflect.BytesKind:
			def = fmt.Sprintf("%q", f.Default().String())
		}
		opts = fmt.Sprintf(" [default = %v]", def)
	}
	p.line(depth, "%s%s %s = %d%s;", label, fieldType(f), f.Name(), f.Number(), opts)
}

func fieldType(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsMap():
		return fmt.Sprintf("map<%s, %s>", fieldType(f.MapKey()), fieldType(f.MapValue()))
	case f.Kind() == protoreflect.MessageKind || f.Kind() == protoreflect.GroupKind:
		return string(f.Message().FullName())
	case f.Kind() == protoreflect.EnumKind:
		return string(f.Enum().FullName())
	}
	return f.Kind().String()
}

func (p *printer) enum(e protoreflect.EnumDescriptor, depth int) {
	p.line(depth, "enum %s {", e.Name())
	for i := range e.Values().Len() {
		v := e.Values().Get(i)
		p.line(depth+1, "%s = %d;", v.Name(), v.Number())
	}
	p.line(depth, "}")
}

func (p *printer) service(s protoreflect.ServiceDescriptor) {
	p.line(0, "service %s {", s.Name())
	for i := range s.Methods().Len() {
		m := s.Methods().Get(i)
		p.line(1, "%s%s", rpcLine(m), p.noteOf(m))
	}
	p.line(0, "}")
}
