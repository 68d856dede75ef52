;; The scanner behind FlatFields (flat-json-bytes.ts): reads one line as a flat JSON object and records where
;; the wanted fields' values are. Same grammar and same answers as the TypeScript reader it replaced (property
;; tests hold it to JSON.parse, and the Cowrie reader built on it to the general parser); what it adds is
;; speed: string contents, most of a line's bytes, are scanned sixteen at a time with SIMD.
;;
;; Build: `make wasm` compiles this file to flat-json-scan.wasm (committed; a unit test checks they match).
;;
;; Memory is fixed (never grows), so views over it stay valid. Its layout is exported as globals and read by
;; the TypeScript side, the one place both agree on it:
;;   BY_LENGTH  2 bytes per key length 0..63: index of the first wanted name of that length, and how many
;;   ENTRIES    8 bytes per wanted name, sorted by length: address of its bytes, field id
;;   NAMES      the wanted names' bytes
;;   KIND, ESCAPED (1 byte per field), START, END (4 bytes per field): the results of the last read
;;   LINE       the line to read, copied in by the caller
;; and 16 spare bytes at the end, so that a 16-byte load at any address below the end stays in bounds.
(module
  (memory (export "memory") 3 3)

  (global (export "MAX_FIELDS") i32 (i32.const 64))
  (global (export "MAX_NAME") i32 (i32.const 63))
  (global $BY_LENGTH (export "BY_LENGTH") i32 (i32.const 256))
  (global $ENTRIES (export "ENTRIES") i32 (i32.const 512))
  (global (export "NAMES") i32 (i32.const 1024))
  (global (export "NAMES_END") i32 (i32.const 4096))
  (global $KIND (export "KIND") i32 (i32.const 4096))
  (global $ESCAPED (export "ESCAPED") i32 (i32.const 4160))
  (global $START (export "START") i32 (i32.const 4224))
  (global $END (export "END") i32 (i32.const 4480))
  (global (export "LINE") i32 (i32.const 65536))
  (global (export "LINE_END") i32 (i32.const 196592)) ;; 3 pages less 16 bytes

  ;; How many fields are wanted (set once by `want`).
  (global $fields (mut i32) (i32.const 0))
  ;; Whether the string stringEnd last scanned held escapes.
  (global $escaped (mut i32) (i32.const 0))

  (func (export "want") (param $fields i32)
    (global.set $fields (local.get $fields)))

  ;; Reads memory[at, end) (no line terminator). 1 when it is a flat object of plain ASCII values: the
  ;; wanted fields' places are then recorded, each position plus `bias`. 0: the line must be read another way.
  (func (export "read") (param $i i32) (param $end i32) (param $bias i32) (result i32)
    (local $c i32) (local $field i32) (local $kind i32) (local $from i32) (local $to i32) (local $escaped i32)
    (memory.fill (global.get $KIND) (i32.const 0) (global.get $fields))
    (local.set $i (call $space (local.get $i) (local.get $end)))
    (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const 0))))
    (if (i32.ne (i32.load8_u (local.get $i)) (i32.const 123 (; { ;))) (then (return (i32.const 0))))
    (local.set $i (call $space (i32.add (local.get $i) (i32.const 1)) (local.get $end)))
    (if (i32.lt_u (local.get $i) (local.get $end))
      (then
        (if (i32.eq (i32.load8_u (local.get $i)) (i32.const 125 (; } ;)))
          (then (return (i32.eq (call $space (i32.add (local.get $i) (i32.const 1)) (local.get $end)) (local.get $end)))))))
    (loop $member
      ;; "key"
      (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const 0))))
      (if (i32.ne (i32.load8_u (local.get $i)) (i32.const 34 (; " ;))) (then (return (i32.const 0))))
      (local.set $from (i32.add (local.get $i) (i32.const 1)))
      (local.set $to (call $stringEnd (local.get $from) (local.get $end)))
      ;; keys with escapes are not plain
      (if (i32.or (i32.lt_s (local.get $to) (i32.const 0)) (global.get $escaped)) (then (return (i32.const 0))))
      (local.set $field (call $fieldOf (local.get $from) (local.get $to)))
      ;; :
      (local.set $i (call $space (i32.add (local.get $to) (i32.const 1)) (local.get $end)))
      (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const 0))))
      (if (i32.ne (i32.load8_u (local.get $i)) (i32.const 58 (; : ;))) (then (return (i32.const 0))))
      (local.set $i (call $space (i32.add (local.get $i) (i32.const 1)) (local.get $end)))
      (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const 0))))
      ;; value
      (local.set $c (i32.load8_u (local.get $i)))
      (local.set $escaped (i32.const 0))
      (local.set $from (local.get $i))
      (block $value
        (if (i32.eq (local.get $c) (i32.const 34 (; " ;)))
          (then
            (local.set $from (i32.add (local.get $i) (i32.const 1)))
            (local.set $to (call $stringEnd (local.get $from) (local.get $end)))
            (if (i32.lt_s (local.get $to) (i32.const 0)) (then (return (i32.const 0))))
            (local.set $escaped (global.get $escaped))
            (local.set $i (i32.add (local.get $to) (i32.const 1)))
            (local.set $kind (i32.const 1 (; STRING ;)))
            (br $value)))
        (if (i32.or (i32.eq (local.get $c) (i32.const 45 (; - ;))) (call $isDigit (local.get $c)))
          (then
            (local.set $to (call $numberEnd (local.get $i) (local.get $end)))
            (if (i32.lt_s (local.get $to) (i32.const 0)) (then (return (i32.const 0))))
            (local.set $i (local.get $to))
            (local.set $kind (i32.const 2 (; NUMBER ;)))
            (br $value)))
        ;; true, false, null: compared four bytes at a time (little-endian)
        (if (i32.le_u (i32.add (local.get $i) (i32.const 4)) (local.get $end))
          (then
            (if (i32.eq (i32.load (local.get $i)) (i32.const 0x65757274 (; true ;)))
              (then
                (local.set $i (i32.add (local.get $i) (i32.const 4)))
                (local.set $kind (i32.const 3 (; TRUE ;)))
                (br $value)))
            (if (i32.eq (i32.load (local.get $i)) (i32.const 0x6c6c756e (; null ;)))
              (then
                (local.set $i (i32.add (local.get $i) (i32.const 4)))
                (local.set $kind (i32.const 5 (; NULL ;)))
                (br $value)))))
        (if (i32.le_u (i32.add (local.get $i) (i32.const 5)) (local.get $end))
          (then
            (if (i32.and
                  (i32.eq (i32.load (local.get $i)) (i32.const 0x736c6166 (; fals ;)))
                  (i32.eq (i32.load8_u offset=4 (local.get $i)) (i32.const 101 (; e ;))))
              (then
                (local.set $i (i32.add (local.get $i) (i32.const 5)))
                (local.set $kind (i32.const 4 (; FALSE ;)))
                (br $value)))))
        (return (i32.const 0)))
      ;; Numbers and literals end where they were read; strings before their closing quote.
      (if (i32.ne (local.get $kind) (i32.const 1)) (then (local.set $to (local.get $i))))
      ;; A repeated key: the last one counts, as with JSON.parse.
      (if (i32.ge_s (local.get $field) (i32.const 0))
        (then
          (i32.store8 (i32.add (global.get $KIND) (local.get $field)) (local.get $kind))
          (i32.store8 (i32.add (global.get $ESCAPED) (local.get $field)) (local.get $escaped))
          (i32.store (i32.add (global.get $START) (i32.shl (local.get $field) (i32.const 2))) (i32.add (local.get $from) (local.get $bias)))
          (i32.store (i32.add (global.get $END) (i32.shl (local.get $field) (i32.const 2))) (i32.add (local.get $to) (local.get $bias)))))
      ;; , or }
      (local.set $i (call $space (local.get $i) (local.get $end)))
      (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const 0))))
      (local.set $c (i32.load8_u (local.get $i)))
      (if (i32.eq (local.get $c) (i32.const 125 (; } ;)))
        (then (return (i32.eq (call $space (i32.add (local.get $i) (i32.const 1)) (local.get $end)) (local.get $end)))))
      (if (i32.ne (local.get $c) (i32.const 44 (; , ;))) (then (return (i32.const 0))))
      (local.set $i (call $space (i32.add (local.get $i) (i32.const 1)) (local.get $end)))
      (br $member))
    (unreachable))

  ;; The first address in [i, end) that is not JSON whitespace (space, tab, return: a line has no line feed), or end.
  (func $space (param $i i32) (param $end i32) (result i32)
    (local $c i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $i)))
        (br_if $done
          (i32.and (i32.ne (local.get $c) (i32.const 32))
            (i32.and (i32.ne (local.get $c) (i32.const 9)) (i32.ne (local.get $c) (i32.const 13)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $i))

  ;; The address of the quote closing the string whose characters start at i, or -1 when the string is not
  ;; closed before end, holds a byte that is a control character or not ASCII, or an escape that is not JSON's.
  ;; $escaped tells whether it held escapes.
  (func $stringEnd (param $i i32) (param $end i32) (result i32)
    (local $bytes v128) (local $special i32) (local $c i32) (local $length i32)
    (global.set $escaped (i32.const 0))
    (loop $next
      (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const -1))))
      (local.set $bytes (v128.load (local.get $i)))
      ;; special: a quote, a backslash, or outside 32..126 (c - 32 > 94 unsigned)
      (local.set $special
        (i8x16.bitmask
          (v128.or
            (v128.or
              (i8x16.eq (local.get $bytes) (v128.const i8x16 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34 34))
              (i8x16.eq (local.get $bytes) (v128.const i8x16 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92 92)))
            (i8x16.gt_u
              (i8x16.sub (local.get $bytes) (v128.const i8x16 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32 32))
              (v128.const i8x16 94 94 94 94 94 94 94 94 94 94 94 94 94 94 94 94)))))
      (if (i32.eqz (local.get $special))
        (then
          (local.set $i (i32.add (local.get $i) (i32.const 16)))
          (br $next)))
      (local.set $i (i32.add (local.get $i) (i32.ctz (local.get $special))))
      (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const -1))))
      (local.set $c (i32.load8_u (local.get $i)))
      (if (i32.eq (local.get $c) (i32.const 34)) (then (return (local.get $i))))
      (if (i32.ne (local.get $c) (i32.const 92)) (then (return (i32.const -1))))
      (local.set $length (call $escapeLength (local.get $i) (local.get $end)))
      (if (i32.lt_s (local.get $length) (i32.const 0)) (then (return (i32.const -1))))
      (global.set $escaped (i32.const 1))
      (local.set $i (i32.add (local.get $i) (local.get $length)))
      (br $next))
    (unreachable))

  ;; Length of the JSON escape at i (a backslash): 2, or 6 for \uXXXX; -1 when it is not one.
  (func $escapeLength (param $i i32) (param $end i32) (result i32)
    (local $c i32) (local $k i32)
    (if (i32.ge_u (i32.add (local.get $i) (i32.const 1)) (local.get $end)) (then (return (i32.const -1))))
    (local.set $c (i32.load8_u offset=1 (local.get $i)))
    ;; " \ / b f n r t
    (if (i32.or
          (i32.or (i32.or (i32.eq (local.get $c) (i32.const 34)) (i32.eq (local.get $c) (i32.const 92)))
                  (i32.or (i32.eq (local.get $c) (i32.const 47)) (i32.eq (local.get $c) (i32.const 98))))
          (i32.or (i32.or (i32.eq (local.get $c) (i32.const 102)) (i32.eq (local.get $c) (i32.const 110)))
                  (i32.or (i32.eq (local.get $c) (i32.const 114)) (i32.eq (local.get $c) (i32.const 116)))))
      (then (return (i32.const 2))))
    (if (i32.or (i32.ne (local.get $c) (i32.const 117 (; u ;))) (i32.gt_u (i32.add (local.get $i) (i32.const 6)) (local.get $end)))
      (then (return (i32.const -1))))
    (local.set $k (i32.add (local.get $i) (i32.const 2)))
    (loop $hex
      (if (i32.eqz (call $isHex (i32.load8_u (local.get $k)))) (then (return (i32.const -1))))
      (local.set $k (i32.add (local.get $k) (i32.const 1)))
      (br_if $hex (i32.lt_u (local.get $k) (i32.add (local.get $i) (i32.const 6)))))
    (i32.const 6))

  (func $isDigit (param $c i32) (result i32)
    (i32.lt_u (i32.sub (local.get $c) (i32.const 48)) (i32.const 10)))

  (func $isHex (param $c i32) (result i32)
    (i32.or (call $isDigit (local.get $c))
      ;; a-f or A-F: lower-cased, then 97..102
      (i32.lt_u (i32.sub (i32.or (local.get $c) (i32.const 32)) (i32.const 97)) (i32.const 6))))

  ;; The byte at i, or -1 at or past end (a digit test then fails, as the grammar needs).
  (func $at (param $i i32) (param $end i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $i) (local.get $end))
      (then (i32.load8_u (local.get $i)))
      (else (i32.const -1))))

  ;; End of the JSON number starting at i (strict grammar: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?), or -1.
  (func $numberEnd (param $i i32) (param $end i32) (result i32)
    (local $c i32)
    (if (i32.eq (call $at (local.get $i) (local.get $end)) (i32.const 45 (; - ;)))
      (then (local.set $i (i32.add (local.get $i) (i32.const 1)))))
    (local.set $c (call $at (local.get $i) (local.get $end)))
    (if (i32.eq (local.get $c) (i32.const 48 (; 0 ;)))
      (then (local.set $i (i32.add (local.get $i) (i32.const 1))))
      (else
        (if (i32.eqz (call $isDigit (local.get $c))) (then (return (i32.const -1))))
        (local.set $i (call $digits (local.get $i) (local.get $end)))))
    (if (i32.eq (call $at (local.get $i) (local.get $end)) (i32.const 46 (; . ;)))
      (then
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (if (i32.eqz (call $isDigit (call $at (local.get $i) (local.get $end)))) (then (return (i32.const -1))))
        (local.set $i (call $digits (local.get $i) (local.get $end)))))
    (local.set $c (call $at (local.get $i) (local.get $end)))
    (if (i32.or (i32.eq (local.get $c) (i32.const 101 (; e ;))) (i32.eq (local.get $c) (i32.const 69 (; E ;))))
      (then
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $c (call $at (local.get $i) (local.get $end)))
        (if (i32.or (i32.eq (local.get $c) (i32.const 43 (; + ;))) (i32.eq (local.get $c) (i32.const 45 (; - ;))))
          (then (local.set $i (i32.add (local.get $i) (i32.const 1)))))
        (if (i32.eqz (call $isDigit (call $at (local.get $i) (local.get $end)))) (then (return (i32.const -1))))
        (local.set $i (call $digits (local.get $i) (local.get $end)))))
    (local.get $i))

  ;; The first address at or after i that is not a digit, or end.
  (func $digits (param $i i32) (param $end i32) (result i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (br_if $done (i32.eqz (call $isDigit (i32.load8_u (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $i))

  ;; The id of the wanted field named by memory[from, to), or -1.
  (func $fieldOf (param $from i32) (param $to i32) (result i32)
    (local $length i32) (local $k i32) (local $last i32) (local $name i32) (local $j i32)
    (local.set $length (i32.sub (local.get $to) (local.get $from)))
    (if (i32.gt_u (local.get $length) (i32.const 63)) (then (return (i32.const -1))))
    (local.set $k (i32.load8_u (i32.add (global.get $BY_LENGTH) (i32.shl (local.get $length) (i32.const 1)))))
    (local.set $last (i32.add (local.get $k)
      (i32.load8_u offset=1 (i32.add (global.get $BY_LENGTH) (i32.shl (local.get $length) (i32.const 1))))))
    (block $none
      (loop $candidate
        (br_if $none (i32.ge_u (local.get $k) (local.get $last)))
        (local.set $name (i32.load (i32.add (global.get $ENTRIES) (i32.shl (local.get $k) (i32.const 3)))))
        (local.set $j (i32.const 0))
        (block $differ
          (loop $byte
            (if (i32.ge_u (local.get $j) (local.get $length))
              (then (return (i32.load offset=4 (i32.add (global.get $ENTRIES) (i32.shl (local.get $k) (i32.const 3)))))))
            (br_if $differ (i32.ne (i32.load8_u (i32.add (local.get $from) (local.get $j)))
                                   (i32.load8_u (i32.add (local.get $name) (local.get $j)))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $byte)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $candidate)))
    (i32.const -1))
)
