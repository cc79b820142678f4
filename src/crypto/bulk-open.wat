;; The two loops of crypto/bulk-open that run over every byte of a bulk item load, as
;; WebAssembly: a load runs once in a fresh process, where JavaScript loops over a
;; million words would still be interpreted. bulk-open.ts embeds this module compiled
;; (wat2wasm from the wabt package; test/crypto/bulk-open.test.ts checks the two agree).
(module
  (import "m" "mem" (memory 1))
  ;; x(a, b, n): memory[a, a + n) ^= memory[b, b + n), eight bytes at a time (n a multiple of 8).
  (func (export "x") (param $a i32) (param $b i32) (param $n i32)
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (i64.store (i32.add (local.get $a) (local.get $i))
          (i64.xor (i64.load (i32.add (local.get $a) (local.get $i)))
                   (i64.load (i32.add (local.get $b) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $next))))
;; c(table, rows, counters): for each of `rows` (slot, blocks, length) triples of i32
  ;; at `table`, the IV at memory[slot + 4, slot + 16) and `blocks` counter blocks written
  ;; from counters + slot + 16: IV ‖ big-endian 32-bit counter, from 2 (GCM's first data block).
  (func (export "c") (param $table i32) (param $rows i32) (param $counters i32)
    (local $end i32) (local $slot i32) (local $out i32) (local $last i32)
    (local $iv0 i64) (local $iv1 i32) (local $n i32)
    (local.set $end (i32.add (local.get $table) (i32.mul (local.get $rows) (i32.const 12))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $table) (local.get $end)))
        (local.set $slot (i32.load (local.get $table)))
        (local.set $iv0 (i64.load (i32.add (local.get $slot) (i32.const 4))))
        (local.set $iv1 (i32.load (i32.add (local.get $slot) (i32.const 12))))
        (local.set $out (i32.add (i32.add (local.get $counters) (local.get $slot)) (i32.const 16)))
        (local.set $last (i32.add (local.get $out) (i32.shl (i32.load offset=4 (local.get $table)) (i32.const 4))))
        (local.set $n (i32.const 2))
        (block $blocksDone
          (loop $block
            (br_if $blocksDone (i32.ge_u (local.get $out) (local.get $last)))
            (i64.store (local.get $out) (local.get $iv0))
            (i32.store offset=8 (local.get $out) (local.get $iv1))
            ;; the counter big-endian: WebAssembly memory is little-endian on every host
            (i32.store offset=12 (local.get $out)
              (i32.or
                (i32.or (i32.shl (local.get $n) (i32.const 24))
                        (i32.shl (i32.and (local.get $n) (i32.const 0xff00)) (i32.const 8)))
                (i32.or (i32.and (i32.shr_u (local.get $n) (i32.const 8)) (i32.const 0xff00))
                        (i32.shr_u (local.get $n) (i32.const 24)))))
            (local.set $n (i32.add (local.get $n) (i32.const 1)))
            (local.set $out (i32.add (local.get $out) (i32.const 16)))
            (br $block)))
        (local.set $table (i32.add (local.get $table) (i32.const 12)))
        (br $row))))
  ;; z(table, rows, size): zeroes every byte of [0, size) outside the rows' bodies (a body
  ;; is `length` bytes from slot + 16), so that only the plaintexts are left in it.
  (func (export "z") (param $table i32) (param $rows i32) (param $size i32)
    (local $end i32) (local $done i32) (local $body i32)
    (local.set $end (i32.add (local.get $table) (i32.mul (local.get $rows) (i32.const 12))))
    (block $rowsDone
      (loop $row
        (br_if $rowsDone (i32.ge_u (local.get $table) (local.get $end)))
        (local.set $body (i32.add (i32.load (local.get $table)) (i32.const 16)))
        (memory.fill (local.get $done) (i32.const 0) (i32.sub (local.get $body) (local.get $done)))
        (local.set $done (i32.add (local.get $body) (i32.load offset=8 (local.get $table))))
        (local.set $table (i32.add (local.get $table) (i32.const 12)))
        (br $row)))
    (memory.fill (local.get $done) (i32.const 0) (i32.sub (local.get $size) (local.get $done)))))
