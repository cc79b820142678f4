;; The loops of crypto/bulk-open that run over every row or byte of a bulk item load,
;; as WebAssembly: a load runs once in a fresh process, where JavaScript loops over a
;; million words would still be interpreted. bulk-open.ts embeds this module compiled
;; (wat2wasm from the wabt package; test/crypto/bulk-open.test.ts checks the two agree).
;;
;; The row table: 16 bytes a row, four i32: the body's offset, its block count, its
;; length, and where the row's sealed-bytes header starts (-1 for a row decoded from text).
(module
  (import "m" "mem" (memory 1))

  ;; x(a, b, n): memory[a, a + n) ^= memory[b, b + n), sixteen bytes at a time (n a multiple of 16).
  (func (export "x") (param $a i32) (param $b i32) (param $n i32)
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (v128.store (i32.add (local.get $a) (local.get $i))
          (v128.xor (v128.load (i32.add (local.get $a) (local.get $i)))
                    (v128.load (i32.add (local.get $b) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $next))))

  ;; k(table, rows, expected, length): the index of the first row whose header is not the
  ;; `length` bytes at `expected` (the mark, the key id's length, the key id), or -1 when
  ;; every row's is. Rows decoded from text have no header here and are skipped.
  (func (export "k") (param $table i32) (param $rows i32) (param $expected i32) (param $length i32) (result i32)
    (local $row i32) (local $at i32) (local $i i32)
    (block $rowsDone
      (loop $next
        (br_if $rowsDone (i32.ge_u (local.get $row) (local.get $rows)))
        (local.set $at (i32.load offset=12 (local.get $table)))
        (if (i32.ge_s (local.get $at) (i32.const 0))
          (then
            (local.set $i (i32.const 0))
            (block $same
              (loop $byte
                (br_if $same (i32.ge_u (local.get $i) (local.get $length)))
                (if (i32.ne (i32.load8_u (i32.add (local.get $at) (local.get $i)))
                            (i32.load8_u (i32.add (local.get $expected) (local.get $i))))
                  (then (return (local.get $row))))
                (local.set $i (i32.add (local.get $i) (i32.const 1)))
                (br $byte)))))
        (local.set $table (i32.add (local.get $table) (i32.const 16)))
        (local.set $row (i32.add (local.get $row) (i32.const 1)))
        (br $next)))
    (i32.const -1))

  ;; c(table, rows, counters): for each row, its IV at memory[body - 12, body) and its
  ;; `blocks` counter blocks written from counters + body: IV ‖ big-endian 32-bit counter,
  ;; from 2 (GCM's first data block), a block a store.
  (func (export "c") (param $table i32) (param $rows i32) (param $counters i32)
    (local $end i32) (local $body i32) (local $out i32) (local $last i32)
    (local $iv v128) (local $n i32)
    (local.set $end (i32.add (local.get $table) (i32.shl (local.get $rows) (i32.const 4))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $table) (local.get $end)))
        (local.set $body (i32.load (local.get $table)))
        ;; the IV and the body's first four bytes, which lane 3 (the counter) replaces
        (local.set $iv (v128.load (i32.sub (local.get $body) (i32.const 12))))
        (local.set $out (i32.add (local.get $counters) (local.get $body)))
        (local.set $last (i32.add (local.get $out) (i32.shl (i32.load offset=4 (local.get $table)) (i32.const 4))))
        (local.set $n (i32.const 2))
        (block $blocksDone
          (loop $block
            (br_if $blocksDone (i32.ge_u (local.get $out) (local.get $last)))
            ;; the counter big-endian: WebAssembly memory is little-endian on every host
            (v128.store (local.get $out)
              (i32x4.replace_lane 3 (local.get $iv)
                (i32.or
                  (i32.or (i32.shl (local.get $n) (i32.const 24))
                          (i32.shl (i32.and (local.get $n) (i32.const 0xff00)) (i32.const 8)))
                  (i32.or (i32.and (i32.shr_u (local.get $n) (i32.const 8)) (i32.const 0xff00))
                          (i32.shr_u (local.get $n) (i32.const 24))))))
            (local.set $n (i32.add (local.get $n) (i32.const 1)))
            (local.set $out (i32.add (local.get $out) (i32.const 16)))
            (br $block)))
        (local.set $table (i32.add (local.get $table) (i32.const 16)))
        (br $row))))

  ;; z(table, rows, size): zeroes every byte of [0, size) outside the rows' bodies (`length`
  ;; bytes from `body`), so that only the plaintexts are left in it.
  (func (export "z") (param $table i32) (param $rows i32) (param $size i32)
    (local $end i32) (local $done i32) (local $body i32)
    (local.set $end (i32.add (local.get $table) (i32.shl (local.get $rows) (i32.const 4))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $table) (local.get $end)))
        (local.set $body (i32.load (local.get $table)))
        (memory.fill (local.get $done) (i32.const 0) (i32.sub (local.get $body) (local.get $done)))
        (local.set $done (i32.add (local.get $body) (i32.load offset=8 (local.get $table))))
        (local.set $table (i32.add (local.get $table) (i32.const 16)))
        (br $row)))
    (memory.fill (local.get $done) (i32.const 0) (i32.sub (local.get $size) (local.get $done)))))
