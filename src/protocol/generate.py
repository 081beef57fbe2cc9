#!/usr/bin/env python3
"""Generates Daruma's Kafka message structs from src/protocol/schemas/*.schema.

Usage: generate.py OUT_DIR SCHEMA...

Writes, under OUT_DIR/protocol/generated/:
  <schema>.h / <schema>.cc   one struct per message with Read/Write for every
                             version, and Decode<Name>/Encode<Name> wrappers
  api_schemas.h              the API-key table (name, key, versions, flexible)
  messages.h                 includes every message header
  any_message.h              AnyRequest and the visitors over every message type
  samples.h / samples.cc     Fill() and MessageSamples(): sample values of every
                             message and version (tests, fuzz seeds; not part
                             of daruma_protocol)
  round_trip_test.cc         a GoogleTest over every message and version

The schema format is described in src/protocol/schemas/README.md. Standard
library only: the build must not need anything beyond python3.
"""

import os
import re
import sys

INT_TYPES = {
    "int8": ("int8_t", "Int8"),
    "int16": ("int16_t", "Int16"),
    "int32": ("int32_t", "Int32"),
    "int64": ("int64_t", "Int64"),
    "uint16": ("uint16_t", "Uint16"),
    "varint": ("int32_t", "Varint"),
    "varlong": ("int64_t", "Varlong"),
}
PRIMITIVES = set(INT_TYPES) | {"float64", "bool", "uuid", "string", "bytes", "records"}
ENUM_HEADERS = {"ErrorCode": "protocol/error_codes.h", "ApiKey": "protocol/api_keys.h"}


class SchemaError(Exception):
    pass


class Versions:
    """A version range: lo..hi inclusive, hi None for open ("3+"), or empty."""

    def __init__(self, text, where):
        self.text = text
        if text == "none":
            self.lo, self.hi = None, None
            return
        m = re.fullmatch(r"(\d+)(\+|-(\d+))?", text)
        if not m:
            raise SchemaError(f"{where}: bad version range {text!r}")
        self.lo = int(m.group(1))
        if m.group(2) == "+":
            self.hi = None
        elif m.group(3) is not None:
            self.hi = int(m.group(3))
        else:
            self.hi = self.lo

    def empty(self):
        return self.lo is None

    def contains(self, v):
        return not self.empty() and v >= self.lo and (self.hi is None or v <= self.hi)

    def cond(self, msg):
        """C++ condition on `version`, simplified against the message's range."""
        if self.empty():
            return "false"
        parts = []
        if self.lo > msg.min_version:
            parts.append(f"version >= {self.lo}")
        if self.hi is not None and self.hi < msg.max_version:
            parts.append(f"version <= {self.hi}")
        return " && ".join(parts) if parts else "true"


def snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


class Field:
    def __init__(self, name, type_text, versions, attrs, where):
        self.name = name
        self.member = snake(name)
        self.where = where
        self.versions = versions
        self.is_array = type_text.startswith("[]")
        self.elem = type_text[2:] if self.is_array else type_text
        self.is_struct = self.elem not in PRIMITIVES
        if self.is_struct and not re.fullmatch(r"[A-Z][A-Za-z0-9]*", self.elem):
            raise SchemaError(f"{where}: unknown type {type_text!r}")
        self.nullable = Versions(attrs.pop("nullable", "none"), where)
        self.emptyisnull = Versions(attrs.pop("emptyisnull", "none"), where)
        self.tag = int(attrs.pop("tag")) if "tag" in attrs else None
        self.tagged = Versions(attrs.pop("tagged", versions.text), where)
        self.default = attrs.pop("default", None)
        self.enum = attrs.pop("enum", None)
        if attrs:
            raise SchemaError(f"{where}: unknown attributes {sorted(attrs)}")
        if self.enum and (self.elem != "int16" or self.is_array):
            raise SchemaError(f"{where}: enum= needs a scalar int16")
        if self.enum and self.enum not in ENUM_HEADERS:
            raise SchemaError(f"{where}: unknown enum {self.enum}")
        if self.tag is not None and self.elem == "records":
            raise SchemaError(f"{where}: records cannot be tagged")
        self.fields = []  # children of a struct field
        self.path = name
        self.ancestors = []  # the struct fields this one is nested in
        self.shared = None  # for a use of a struct declared elsewhere: that declaration
        self.shared_by = []  # for a declaration: the other fields using its struct

    @property
    def struct_path(self):
        """The path naming a declared struct's own fields: a struct used by
        several fields is named after its type (`Topic.Name`), not one use."""
        return self.elem if self.shared_by else self.path

    @property
    def optional(self):
        """The C++ member is std::optional when the field is ever nullable."""
        return not self.nullable.empty()


class Message:
    def __init__(self, path):
        self.path = path
        self.base = os.path.splitext(os.path.basename(path))[0]
        self.fields = []
        self.has_header = False

    def header(self, words, where):
        if len(words) < 2 or words[0] not in ("request", "response"):
            raise SchemaError(f"{where}: expected 'request|response Name key=.. versions=..'")
        self.direction = words[0]
        self.api = words[1]
        self.name = self.api + ("Request" if self.direction == "request" else "Response")
        attrs = dict(w.split("=", 1) for w in words[2:])
        try:
            self.key = int(attrs["key"])
            valid = Versions(attrs["versions"], where)
        except KeyError as e:
            raise SchemaError(f"{where}: missing {e.args[0]}=")
        self.min_version, self.max_version = valid.lo, valid.hi
        if valid.empty() or valid.hi is None:
            raise SchemaError(f"{where}: versions= must be a closed range")
        self.flexible = Versions(attrs.get("flexible", "none"), where)
        self.has_header = True


def parse(path):
    msg = Message(path)
    stack = []  # (indent, field)
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            where = f"{path}:{lineno}"
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if not msg.has_header:
                msg.header(line.split(), where)
                continue
            indent = len(line) - len(line.lstrip(" "))
            words = line.split()
            if len(words) < 3:
                raise SchemaError(f"{where}: expected 'Name Type Versions [attr=value...]'")
            attrs = {}
            for w in words[3:]:
                if "=" not in w:
                    raise SchemaError(f"{where}: expected attr=value, found {w!r}")
                k, v = w.split("=", 1)
                attrs[k] = v
            field = Field(words[0], words[1], Versions(words[2], where), attrs, where)
            while stack and stack[-1][0] >= indent:
                stack.pop()
            field.ancestors = [f for _, f in stack]
            if stack:
                parent = stack[-1][1]
                if not parent.is_struct:
                    raise SchemaError(f"{where}: {parent.name} is not a struct")
                field.path = parent.path + "." + field.name
                parent.fields.append(field)
            elif indent != 0:
                raise SchemaError(f"{where}: unexpected indentation")
            else:
                msg.fields.append(field)
            stack.append((indent, field))
    if not msg.has_header:
        raise SchemaError(f"{path}: empty schema")
    resolve_shared_structs(msg)
    check_structs(msg)
    return msg


def repath(field, path):
    field.path = path
    for c in field.fields:
        repath(c, path + "." + c.name)


def resolve_shared_structs(msg):
    """A struct field with no fields of its own uses the struct of that name
    declared (with its fields) on an earlier line of the message, as Kafka's
    commonStructs do: both members then have the same C++ type."""
    declared = {}
    for f in all_fields(msg.fields):  # file order
        if not f.is_struct:
            continue
        if f.fields:
            if f.elem in declared:
                raise SchemaError(
                    f"{f.where}: struct name {f.elem} already used at {declared[f.elem].where}")
            declared[f.elem] = f
            continue
        decl = declared.get(f.elem)
        if decl is None:
            raise SchemaError(
                f"{f.where}: struct {f.elem} has no fields (a shared struct is declared, "
                "with its fields, on an earlier line)")
        if decl in f.ancestors:
            raise SchemaError(f"{f.where}: struct {f.elem} cannot contain itself")
        f.shared = decl
        decl.shared_by.append(f)
    for decl in declared.values():
        if decl.shared_by:
            for c in decl.fields:
                repath(c, decl.elem + "." + c.name)


def structs_of(fields):
    """Declared struct fields, children before parents (declaration order);
    a field using a struct declared elsewhere is not a declaration. A struct
    is declared on an earlier line than its other uses, so it comes before
    every struct holding one of them."""
    out = []
    for f in fields:
        if f.is_struct and f.shared is None:
            out.extend(structs_of(f.fields))
            out.append(f)
    return out


def check_structs(msg):
    seen = {}
    for s in structs_of(msg.fields):
        if s.elem in seen:
            raise SchemaError(f"{s.where}: struct name {s.elem} already used at {seen[s.elem]}")
        seen[s.elem] = s.where
    for f in all_fields(msg.fields):
        tags = [c.tag for c in f.fields if c.tag is not None] if f.is_struct else []
        if len(tags) != len(set(tags)):
            raise SchemaError(f"{f.where}: duplicate tags in {f.elem}")
    top = [c.tag for c in msg.fields if c.tag is not None]
    if len(top) != len(set(top)):
        raise SchemaError(f"{msg.path}: duplicate top-level tags")


def all_fields(fields):
    for f in fields:
        yield f
        yield from all_fields(f.fields)


# ---------------------------------------------------------------- C++ types


class Gen:
    def __init__(self, msg):
        self.msg = msg
        self.owned_records = msg.direction == "response"

    def elem_type(self, f):
        if f.is_struct:
            return f.elem
        if f.enum:
            return f.enum
        if f.elem in INT_TYPES:
            return INT_TYPES[f.elem][0]
        return {
            "float64": "double",
            "bool": "bool",
            "uuid": "WireUuid",
            "string": "std::string",
            "bytes": "Bytes",
            "records": "Bytes" if self.owned_records else "ByteSpan",
        }[f.elem]

    def cpp_type(self, f):
        t = self.elem_type(f)
        if f.is_array:
            t = f"std::vector<{t}>"
        if f.optional:
            if f.is_struct and not f.is_array:
                raise SchemaError(f"{f.where}: nullable structs are not supported")
            t = f"std::optional<{t}>"
        return t

    def default_expr(self, f):
        """Initializer for the member, or None for value-initialisation."""
        d = f.default
        if f.is_array or f.is_struct:
            if d not in (None, "null"):
                raise SchemaError(f"{f.where}: arrays and structs only default to null/empty")
            return None
        if f.elem in ("string", "bytes", "records"):
            if d is None or d == "null":
                if d == "null" and not f.optional:
                    raise SchemaError(f"{f.where}: default=null on a non-nullable field")
                return None
            if f.elem == "string":
                if not (d.startswith('"') and d.endswith('"')):
                    raise SchemaError(f"{f.where}: string defaults are quoted")
                return d
            if d != "empty":
                raise SchemaError(f"{f.where}: bytes/records default to null or empty")
            return f"{self.elem_type(f)}{{}}"
        if f.elem == "bool":
            if d not in (None, "true", "false"):
                raise SchemaError(f"{f.where}: bad bool default {d!r}")
            return d
        if f.elem == "uuid":
            if d is not None:
                raise SchemaError(f"{f.where}: uuid defaults to zero")
            return None
        if d is None:
            return None
        int(d, 0)  # validates the literal
        t = self.elem_type(f)
        if f.enum:
            return f"static_cast<{t}>({d})"
        return f"static_cast<{t}>({d}LL)" if f.elem != "float64" else d

    def is_default_expr(self, f, x):
        """C++ expression true when member `x` differs from its default."""
        if f.is_struct and not f.is_array:
            return f"!({x} == {f.elem}{{}})"
        if f.optional:
            d = self.default_expr(f)
            if d is None:
                return f"{x}.has_value()"
            return f"{x} != {d}"
        if f.is_array:
            return f"!{x}.empty()"
        d = self.default_expr(f)
        if d is None:
            if f.elem == "uuid":
                return f"{x} != WireUuid{{}}"
            if f.elem in ("string", "bytes"):
                return f"!{x}.empty()"
            return f"{x} != {self.elem_type(f)}{{}}"
        return f"{x} != {d}"

    # ------------------------------------------------------------- reading

    def read_scalar(self, f, r):
        """Expression reading one (non-array, non-struct) element."""
        p = f'"{f.path}"'
        if f.enum:
            return f"static_cast<{f.enum}>({r}.ReadInt16({p}))"
        if f.elem in INT_TYPES:
            return f"{r}.Read{INT_TYPES[f.elem][1]}({p})"
        return {
            "float64": f"{r}.ReadFloat64({p})",
            "bool": f"{r}.ReadBool({p})",
            "uuid": f"{r}.ReadUuid({p})",
            "string": f"{r}.ReadString({p}, enc)",
            "bytes": f"ToBytes({r}.ReadBytes({p}, enc))",
        }[f.elem]

    def read_field(self, f, x, r, out):
        """Statements reading field `f` into member expression `x`."""
        p = f'"{f.path}"'
        nullable = f.nullable.cond(self.msg)
        if f.is_array:
            if f.is_struct:
                one = f"[&](ProtocolReader& er) {{ {f.elem} e; (void)e.Read(er, version); return e; }}"
            else:
                one = f"[&](ProtocolReader& er) {{ return {self.read_scalar(f, 'er')}; }}"
            out.append(f"ReadArrayField({r}, {p}, enc, {nullable}, {x}, {one});")
            if not f.emptyisnull.empty():
                out.append(f"if ({f.emptyisnull.cond(self.msg)} && {x} && {x}->empty()) {x}.reset();")
        elif f.is_struct:
            out.append(f"(void){x}.Read({r}, version);")
        elif f.elem == "string":
            out.append(f"ReadStringField({r}, {p}, enc, {nullable}, {x});")
        elif f.elem == "bytes" or (f.elem == "records" and self.owned_records):
            out.append(f"ReadOwnedBytesField({r}, {p}, enc, {nullable}, {x});")
        elif f.elem == "records":
            out.append(f"ReadBytesViewField({r}, {p}, enc, {nullable}, {x});")
        else:
            out.append(f"{x} = {self.read_scalar(f, r)};")

    def write_scalar(self, f, v, w):
        if f.enum:
            return f"{w}.WriteInt16(static_cast<int16_t>({v}));"
        if f.elem in INT_TYPES:
            return f"{w}.Write{INT_TYPES[f.elem][1]}({v});"
        return {
            "float64": f"{w}.WriteFloat64({v});",
            "bool": f"{w}.WriteBool({v});",
            "uuid": f"{w}.WriteUuid({v});",
            "string": f"{w}.WriteString({v}, enc);",
            "bytes": f"{w}.WriteBytes({v}, enc);",
        }[f.elem]

    def write_field(self, f, x, w, out):
        nullable = f.nullable.cond(self.msg)
        if f.is_array:
            et = self.elem_type(f)
            if f.is_struct:
                one = f"[&](const {et}& e, ProtocolWriter& ew) {{ e.Write(ew, version); }}"
            else:
                one = f"[&](const {et}& e, ProtocolWriter& ew) {{ {self.write_scalar(f, 'e', 'ew')} }}"
            out.append(f"WriteArrayField({w}, enc, {nullable}, {x}, {one});")
        elif f.is_struct:
            out.append(f"{x}.Write({w}, version);")
        elif f.elem == "string":
            out.append(f"WriteStringField({w}, enc, {nullable}, {x});")
        elif f.elem == "records" and self.owned_records:
            out.append(f"WriteRecordsField({w}, enc, {nullable}, {x}, file_{f.member});")
        elif f.elem in ("bytes", "records"):
            out.append(f"WriteBytesField({w}, enc, {nullable}, {x});")
        else:
            out.append(self.write_scalar(f, x, w))

    # ------------------------------------------------------------- structs

    def struct_decl(self, name, fields, top):
        m = self.msg
        lines = []
        lines.append(f"struct {name} {{")
        if top:
            lines.append(f"  static constexpr int16_t kApiKey = {m.key};")
            lines.append(f'  static constexpr const char* kApiName = "{m.api}";')
            lines.append(f"  static constexpr bool kIsRequest = {str(m.direction == 'request').lower()};")
            lines.append(f"  static constexpr int16_t kMinVersion = {m.min_version};")
            lines.append(f"  static constexpr int16_t kMaxVersion = {m.max_version};")
            ff = -1 if m.flexible.empty() else m.flexible.lo
            lines.append(f"  static constexpr int16_t kFirstFlexibleVersion = {ff};")
            lines.append("")
            for s in structs_of(fields):
                lines.extend("  " + l for l in self.struct_decl(s.elem, s.fields, False))
                lines.append("")
        custom_eq = False
        for f in fields:
            d = self.default_expr(f)
            init = f" = {d}" if d is not None else "{}"
            lines.append(f"  {self.cpp_type(f)} {f.member}{init};  // {f.versions.text}")
            if f.elem == "records" and self.owned_records and not f.is_array:
                lines.append(
                    f"  // Sent after `{f.member}`, spliced in unread (encode only).")
                lines.append(f"  std::vector<FileSlice> file_{f.member};")
            if f.elem == "records" and not self.owned_records:
                custom_eq = True
        if not m.flexible.empty():
            lines.append("  // Tagged fields this schema does not know, written back as read.")
            lines.append("  std::vector<UnknownTaggedField> unknown_tagged_fields;")
        lines.append("")
        lines.append("  Status Read(ProtocolReader& reader, int16_t version);")
        lines.append("  void Write(ProtocolWriter& writer, int16_t version) const;")
        if custom_eq:
            lines.append("  // Compares record CONTENTS (spans have no operator==).")
            lines.append(f"  bool operator==(const {name}& other) const;")
        else:
            lines.append(f"  bool operator==(const {name}&) const = default;")
        lines.append("};")
        return lines

    def struct_defs(self, qual, fields, path, custom_eq):
        m = self.msg
        flex = "false" if m.flexible.empty() else m.flexible.cond(m)
        tag_path = f"{path}._tagged_fields" if path else "_tagged_fields"
        out = []
        # A message with one version whose fields all span it never reads
        # `version` in a nested struct: hence [[maybe_unused]].
        out.append(f"Status {qual}::Read(ProtocolReader& reader, [[maybe_unused]] int16_t version) {{")
        out.append(f"  [[maybe_unused]] const bool flexible = {flex};")
        out.append("  [[maybe_unused]] const Encoding enc = EncodingFor(flexible);")
        body = []
        for f in fields:
            if f.tag is not None:
                continue
            stmts = []
            self.read_field(f, f.member, "reader", stmts)
            self.guard(f.versions.cond(m), stmts, body)
        if not m.flexible.empty():
            body.append("if (flexible) {")
            body.append(f'  for (const TaggedField& tf : reader.ReadTaggedFields("{tag_path}")) {{')
            tagged = [f for f in fields if f.tag is not None]
            if tagged:
                body.append("    switch (tf.tag) {")
                for f in sorted(tagged, key=lambda f: f.tag):
                    body.append(f"      case {f.tag}:")
                    body.append(f"        if ({f.tagged.cond(m)}) {{")
                    body.append("          ProtocolReader sub = reader.SubReader(tf.data);")
                    stmts = []
                    self.read_field(f, f.member, "sub", stmts)
                    body.extend("          " + s for s in stmts)
                    body.append(f'          reader.Absorb(sub, "{f.path}");')
                    body.append("          continue;")
                    body.append("        }")
                    body.append("        break;")
                body.append("      default:")
                body.append("        break;")
                body.append("    }")
            body.append("    unknown_tagged_fields.push_back({tf.tag, ToBytes(tf.data)});")
            body.append("  }")
            body.append("}")
        out.extend("  " + b for b in body)
        out.append("  return reader.status();")
        out.append("}")
        out.append("")
        out.append(
            f"void {qual}::Write(ProtocolWriter& writer, [[maybe_unused]] int16_t version) const {{")
        out.append(f"  [[maybe_unused]] const bool flexible = {flex};")
        out.append("  [[maybe_unused]] const Encoding enc = EncodingFor(flexible);")
        body = []
        for f in fields:
            if f.tag is not None:
                continue
            stmts = []
            self.write_field(f, f.member, "writer", stmts)
            self.guard(f.versions.cond(m), stmts, body)
        if not m.flexible.empty():
            tagged = [f for f in fields if f.tag is not None]
            body.append("if (flexible) {")
            if tagged:
                body.append("  std::vector<UnknownTaggedField> tagged;")
                for f in sorted(tagged, key=lambda f: f.tag):
                    cond = f.tagged.cond(m)
                    cond = "" if cond == "true" else f"({cond}) && "
                    body.append(f"  if ({cond}{self.is_default_expr(f, f.member)}) {{")
                    body.append("    ProtocolWriter tw;")
                    stmts = []
                    self.write_field(f, f.member, "tw", stmts)
                    body.extend("    " + s for s in stmts)
                    body.append(f"    tagged.push_back({{{f.tag}, tw.Release()}});")
                    body.append("  }")
                body.append("  WriteTaggedSection(writer, tagged, unknown_tagged_fields);")
            else:
                body.append("  WriteTaggedSection(writer, {}, unknown_tagged_fields);")
            body.append("}")
        out.extend("  " + b for b in body)
        out.append("}")
        out.append("")
        if custom_eq:
            out.append(f"bool {qual}::operator==(const {qual.split('::')[-1]}& other) const {{")
            members = [f.member for f in fields]
            if not m.flexible.empty():
                members.append("unknown_tagged_fields")
            conj = " &&\n         ".join(f"FieldEquals({x}, other.{x})" for x in members)
            out.append(f"  return {conj};")
            out.append("}")
            out.append("")
        return out

    def guard(self, cond, stmts, body):
        if cond == "true":
            body.extend(stmts)
        elif cond == "false":
            return
        else:
            body.append(f"if ({cond}) {{")
            body.extend("  " + s for s in stmts)
            body.append("}")

    # ------------------------------------------------------------- files

    def header(self):
        m = self.msg
        enums = sorted({ENUM_HEADERS[f.enum] for f in all_fields(m.fields) if f.enum})
        out = [
            f"// Generated by src/protocol/generate.py from {os.path.basename(m.path)}; do not edit.",
            f"// {m.name}: API key {m.key}, versions {m.min_version}-{m.max_version}, flexible "
            f"{m.flexible.text}.",
            "#pragma once",
            "",
            "#include <cstdint>",
            "#include <optional>",
            "#include <string>",
            "#include <vector>",
            "",
            '#include "common/bytes.h"',
            '#include "common/status.h"',
        ]
        out += [f'#include "{h}"' for h in enums]
        out += [
            '#include "protocol/message_support.h"',
            '#include "protocol/protocol_reader.h"',
            '#include "protocol/protocol_writer.h"',
            '#include "protocol/response_frame.h"',
            "",
            "namespace daruma {",
            "",
        ]
        out += self.struct_decl(m.name, m.fields, True)
        direction = m.direction
        out += [
            "",
            f"// Checks `version` against the advertised range, reads the whole body and",
            f'// names the message in any error ("{m.api} v7 {direction}: field ...").',
            f"Result<{m.name}> Decode{m.name}(ProtocolReader& reader, int16_t version);",
            f"void Encode{m.name}(const {m.name}& message, int16_t version, ProtocolWriter& writer);",
            "",
            "}  // namespace daruma",
            "",
        ]
        return "\n".join(out)

    def source(self):
        m = self.msg
        out = [
            f"// Generated by src/protocol/generate.py from {os.path.basename(m.path)}; do not edit.",
            f'#include "protocol/generated/{m.base}.h"',
            "",
            "#include <utility>",
            "",
            '#include "protocol/codec_util.h"',
            "",
            "namespace daruma {",
            "",
        ]
        for s in structs_of(m.fields):
            custom = any(f.elem == "records" for f in s.fields) and not self.owned_records
            out += self.struct_defs(f"{m.name}::{s.elem}", s.fields, s.struct_path, custom)
        custom = any(f.elem == "records" for f in m.fields) and not self.owned_records
        out += self.struct_defs(m.name, m.fields, "", custom)
        out += [
            f"Result<{m.name}> Decode{m.name}(ProtocolReader& reader, int16_t version) {{",
            f"  return DecodeMessage<{m.name}>(reader, version);",
            "}",
            "",
            f"void Encode{m.name}(const {m.name}& message, int16_t version, ProtocolWriter& writer) {{",
            "  message.Write(writer, version);",
            "}",
            "",
            "}  // namespace daruma",
            "",
        ]
        return "\n".join(out)

    # ------------------------------------------------------------- round trip

    def fill_defs(self):
        """Fill(x, version, seed) overloads setting every field of `version`
        to a non-default value, for samples.cc (the round-trip test and the
        fuzz seeds). The nested structs' overloads are file-local; the
        message's own is declared in samples.h."""
        m = self.msg
        out = []
        nested = [(f"{m.name}::{s.elem}", s.fields) for s in structs_of(m.fields)]
        for i, (qual, fields) in enumerate(nested + [(m.name, m.fields)]):
            top = i == len(nested)
            if i == 0 and nested:
                out.append("namespace {")
                out.append("")
            if top and nested:
                out.append("}  // namespace")
                out.append("")
            out.append(f"void Fill({qual}& x, int16_t version, int seed) {{")
            out.append("  (void)version;")
            out.append("  (void)seed;")
            for f in fields:
                stmts = self.fill_field(f, f"x.{f.member}")
                body = []
                self.guard(f.versions.cond(m), stmts, body)
                out.extend("  " + b for b in body)
            if not m.flexible.empty():
                out.append(f"  if ({m.flexible.cond(m)}) x.unknown_tagged_fields = {{{{1000, Bytes{{0xab, 0xcd}}}}}};")
            out.append("}")
            out.append("")
        return out

    def sample(self, f):
        """A non-default sample value expression for one element."""
        if f.enum:
            return f"static_cast<{f.enum}>(seed + 3)"
        if f.elem in INT_TYPES:
            return f"static_cast<{INT_TYPES[f.elem][0]}>(seed + 3)"
        return {
            "float64": "seed + 0.5",
            "bool": ("false" if f.default == "true" else "true"),
            "uuid": "WireUuid{uint8_t(seed + 1), 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}",
            "string": f'std::string("{f.name}-") + std::to_string(seed)',
            "bytes": "Bytes{uint8_t(seed), 1, 2}",
            "records": "Bytes{uint8_t(seed), 9, 8, 7}" if self.owned_records else "ByteSpan(SampleRecords())",
        }[f.elem]

    def fill_field(self, f, x):
        if f.is_array:
            et = self.elem_type(f)
            if f.is_struct:
                et = f"{self.msg.name}::{et}"
                return [
                    f"{{ std::vector<{et}> v(2); Fill(v[0], version, seed + 1); Fill(v[1], version, seed + 2); {x} = std::move(v); }}"
                ]
            return [f"{x} = std::vector<{et}>{{{self.sample(f)}, {self.sample(f).replace('seed', '(seed + 1)')}}};"]
        if f.is_struct:
            return [f"Fill({x}, version, seed + 1);"]
        return [f"{x} = {self.sample(f)};"]


def api_table(msgs):
    reqs = sorted((m for m in msgs if m.direction == "request"), key=lambda m: m.key)
    out = [
        "// Generated by src/protocol/generate.py; do not edit.",
        "// Every API with a schema: key, name, the schema's versions and its first",
        "// flexible version (-1: never flexible). Sorted by key.",
        "#pragma once",
        "",
        "#include <array>",
        "#include <cstdint>",
        "",
        "namespace daruma {",
        "",
        "struct ApiSchema {",
        "  int16_t key;",
        "  const char* name;",
        "  int16_t min_version;",
        "  int16_t max_version;",
        "  int16_t first_flexible;",
        "};",
        "",
        f"inline constexpr std::array<ApiSchema, {len(reqs)}> kApiSchemas = {{{{",
    ]
    for m in reqs:
        ff = -1 if m.flexible.empty() else m.flexible.lo
        out.append(f'    {{{m.key}, "{m.api}", {m.min_version}, {m.max_version}, {ff}}},')
    out += ["}};", "", "}  // namespace daruma", ""]
    return "\n".join(out)


def any_message_header(msgs):
    reqs = sorted((m for m in msgs if m.direction == "request"), key=lambda m: m.key)

    def switch(direction):
        out = ["  switch (key) {"]
        for m in sorted((m for m in msgs if m.direction == direction), key=lambda m: m.key):
            out += [
                f"    case {m.key}:",
                f"      visit.template operator()<{m.name}>();",
                "      return true;",
            ]
        out += ["    default:", "      return false;", "  }"]
        return out

    out = [
        "// Generated by src/protocol/generate.py; do not edit.",
        "// Every message with a schema, for code that handles messages generically",
        "// (protocol/any_request.h, the request-decoder fuzzer, the sample messages",
        "// and their test): a new schema joins these lists with no edit elsewhere.",
        "#pragma once",
        "",
        "#include <cstdint>",
        "#include <variant>",
        "",
        '#include "protocol/generated/messages.h"',
        "",
        "namespace daruma {",
        "",
        "// Every request struct, by API key.",
        "using AnyRequest = std::variant<" + ", ".join(m.name for m in reqs) + ">;",
        "",
        "// Calls visit.template operator()<T>() once for every message struct T,",
        "// requests and responses, in schema file order.",
        "template <typename Visitor>",
        "void ForEachMessageType(Visitor&& visit) {",
    ]
    out += [f"  visit.template operator()<{m.name}>();" for m in msgs]
    out += [
        "}",
        "",
        "// Calls visit.template operator()<T>() for the request struct T of API `key`;",
        "// returns false, calling nothing, when no schema has that request.",
        "template <typename Visitor>",
        "bool VisitRequestType(int16_t key, Visitor&& visit) {",
    ]
    out += switch("request")
    out += [
        "}",
        "",
        "// The same for the response struct of API `key`.",
        "template <typename Visitor>",
        "bool VisitResponseType(int16_t key, Visitor&& visit) {",
    ]
    out += switch("response")
    out += ["}", "", "}  // namespace daruma", ""]
    return "\n".join(out)


def samples_header(msgs):
    out = [
        "// Generated by src/protocol/generate.py; do not edit.",
        "// Sample values for every message with a schema, for the tests and the",
        "// request-decoder fuzzer's seeds; not part of daruma_protocol (a broker never",
        "// invents messages), built from DARUMA_PROTOCOL_SAMPLE_SOURCES.",
        "//",
        "// Fill(message, version, seed) sets every field present in `version` to a",
        "// non-default value (arrays of two, nested structs filled too, an unknown",
        "// tagged field in flexible versions); `seed` varies the values. Request",
        "// records point at a static buffer, valid for the whole program.",
        "#pragma once",
        "",
        "#include <cstdint>",
        "#include <string>",
        "#include <vector>",
        "",
        '#include "common/bytes.h"',
        '#include "protocol/generated/messages.h"',
        "",
        "namespace daruma {",
        "",
    ]
    out += [f"void Fill({m.name}& x, int16_t version, int seed);" for m in msgs]
    out += [
        "",
        "// One sample body of one message at one version.",
        "struct MessageSample {",
        "  const char* schema;  // the schema file's name: \"produce_request\"",
        "  int16_t api_key;",
        "  bool is_request;",
        "  int16_t version;",
        "  bool filled;  // Fill(..., seed 0) when true, the default struct when false",
        "  Bytes body;",
        "",
        "  // \"produce_request_v7_filled\": unique among MessageSamples(), a file name.",
        "  std::string Name() const;",
        "};",
        "",
        "// Every message with a schema at every version of its schema, as the default",
        "// struct and filled, in schema file order.",
        "std::vector<MessageSample> MessageSamples();",
        "",
        "// `sample.body` behind a request header (v1 or v2 as its API key and version",
        "// say; correlation id 1, client id \"seed\"): a frame as the broker receives it",
        "// without its size prefix. A response's body gets the request header too,",
        "// because request_decoder_fuzz feeds every body to the response decoder of",
        "// the header's key and version as well.",
        "Bytes SampleFrame(const MessageSample& sample);",
        "",
        "}  // namespace daruma",
        "",
    ]
    return "\n".join(out)


def samples_source(msgs, gens):
    out = [
        "// Generated by src/protocol/generate.py; do not edit.",
        '#include "protocol/generated/samples.h"',
        "",
        "#include <string>",
        "#include <utility>",
        "#include <vector>",
        "",
        '#include "protocol/request_header.h"',
        "",
        "namespace daruma {",
        "namespace {",
        "",
        "const Bytes& SampleRecords() {",
        "  static const Bytes kRecords = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};",
        "  return kRecords;",
        "}",
        "",
        "template <typename T>",
        "void AddSamples(const char* schema, std::vector<MessageSample>& out) {",
        "  for (int16_t version = T::kMinVersion; version <= T::kMaxVersion; ++version) {",
        "    for (bool filled : {false, true}) {",
        "      T message;",
        "      if (filled) Fill(message, version, 0);",
        "      ProtocolWriter writer;",
        "      message.Write(writer, version);",
        "      out.push_back({schema, T::kApiKey, T::kIsRequest, version, filled, writer.Release()});",
        "    }",
        "  }",
        "}",
        "",
        "}  // namespace",
        "",
    ]
    for g in gens:
        out += g.fill_defs()
    out += [
        "std::string MessageSample::Name() const {",
        '  return std::string(schema) + "_v" + std::to_string(version) + (filled ? "_filled" : "_default");',
        "}",
        "",
        "std::vector<MessageSample> MessageSamples() {",
        "  std::vector<MessageSample> out;",
    ]
    out += [f'  AddSamples<{m.name}>("{m.base}", out);' for m in msgs]
    out += [
        "  return out;",
        "}",
        "",
        "Bytes SampleFrame(const MessageSample& sample) {",
        "  ProtocolWriter writer;",
        '  EncodeRequestHeader({ApiKey(sample.api_key), sample.version, 1, "seed"}, writer);',
        "  writer.WriteRaw(sample.body);",
        "  return writer.Release();",
        "}",
        "",
        "}  // namespace daruma",
        "",
    ]
    return "\n".join(out)


def round_trip_test(msgs):
    out = [
        "// Generated by src/protocol/generate.py; do not edit.",
        "// Every message at every version of its schema: a struct with every field",
        "// of that version set (and an unknown tagged field in flexible versions)",
        "// encodes, decodes back to an equal struct consuming every byte, and",
        "// re-encodes to the same bytes.",
        "#include <gtest/gtest.h>",
        "",
        "#include <string>",
        "",
        '#include "protocol/generated/messages.h"',
        '#include "protocol/generated/samples.h"',
        "",
        "namespace daruma {",
        "namespace {",
        "",
    ]
    out += [
        "template <typename T>",
        "void ExpectRoundTrip(int16_t version) {",
        "  T value;",
        "  Fill(value, version, 0);",
        "  ProtocolWriter w;",
        "  value.Write(w, version);",
        "  Bytes bytes = w.Release();",
        "  ProtocolReader r(bytes);",
        "  T decoded;",
        "  Status s = decoded.Read(r, version);",
        '  ASSERT_TRUE(s.ok()) << T::kApiName << " v" << version << ": " << s.ToString();',
        '  EXPECT_TRUE(r.AtEnd()) << T::kApiName << " v" << version << ": " << r.remaining();',
        '  EXPECT_TRUE(decoded == value) << T::kApiName << " v" << version;',
        "  ProtocolWriter again;",
        "  decoded.Write(again, version);",
        '  EXPECT_EQ(again.Release(), bytes) << T::kApiName << " v" << version;',
        "  // A default struct round-trips too (absent fields keep their defaults).",
        "  ProtocolWriter dw;",
        "  T{}.Write(dw, version);",
        "  Bytes default_bytes = dw.Release();",
        "  ProtocolReader dr(default_bytes);",
        "  T default_decoded;",
        "  ASSERT_TRUE(default_decoded.Read(dr, version).ok()) << T::kApiName << \" v\" << version;",
        "  EXPECT_TRUE(dr.AtEnd()) << T::kApiName << \" v\" << version;",
        "}",
        "",
        "template <typename T>",
        "void ExpectEveryVersionRoundTrips() {",
        "  for (int16_t v = T::kMinVersion; v <= T::kMaxVersion; ++v) ExpectRoundTrip<T>(v);",
        "}",
        "",
    ]
    for m in msgs:
        out += [
            f"TEST(GeneratedRoundTripTest, {m.name}) {{",
            f"  ExpectEveryVersionRoundTrips<{m.name}>();",
            "}",
            "",
        ]
    out += ["}  // namespace", "}  // namespace daruma", ""]
    return "\n".join(out)


def write_file(path, text):
    # Always written, even when unchanged: the build compares the outputs'
    # timestamps with the schemas' and the script's.
    with open(path, "w") as f:
        f.write(text)


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    out_dir = os.path.join(argv[1], "protocol", "generated")
    os.makedirs(out_dir, exist_ok=True)
    try:
        msgs = [parse(p) for p in sorted(argv[2:])]
        names = {}
        for m in msgs:
            if m.name in names:
                raise SchemaError(f"{m.path}: {m.name} already defined in {names[m.name]}")
            names[m.name] = m.path
        gens = [Gen(m) for m in msgs]
        files = {}
        for g in gens:
            files[g.msg.base + ".h"] = g.header()
            files[g.msg.base + ".cc"] = g.source()
    except SchemaError as e:
        sys.stderr.write(f"generate.py: {e}\n")
        return 1
    files["api_schemas.h"] = api_table(msgs)
    files["messages.h"] = "\n".join(
        ["// Generated by src/protocol/generate.py; do not edit.", "#pragma once", ""]
        + [f'#include "protocol/generated/{m.base}.h"' for m in msgs]
        + [""]
    )
    files["any_message.h"] = any_message_header(msgs)
    files["samples.h"] = samples_header(msgs)
    files["samples.cc"] = samples_source(msgs, gens)
    files["round_trip_test.cc"] = round_trip_test(msgs)
    for name, text in files.items():
        write_file(os.path.join(out_dir, name), text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
