//! scaletune SME ABI support: the routines of the AAPCS64 "SME support
//! routines" that SME kernels call and that gcc 12's libgcc lacks.
//
// Merged into every kernel object that uses ZA (see codegen/src/llvm/runtime.rs),
// with its symbols made local to that object. A function with a fresh ZA
// state (`aarch64_new_za`) calls `__arm_tpidr2_save` on entry when TPIDR2_EL0
// is not null: a caller that shares ZA lazily left its contents to be saved.
// Code that calls a function without ZA while ZA holds live data sets up such
// a lazy save and calls `__arm_tpidr2_restore` afterwards; `__arm_za_disable`
// commits a pending save and turns ZA off. `__arm_get_current_vg` gives the
// number of 64-bit granules of an SVE vector in the current mode (0 in normal
// mode on a CPU without SVE, such as Apple M4): the prologue of a streaming
// function on such a CPU calls it to record VG for the unwinder.
//
// The TPIDR2 block that TPIDR2_EL0 points at: bytes 0..8 the save buffer
// (`za_save_buffer`), bytes 8..10 the number of ZA horizontal slices to save
// (`num_za_save_slices`), bytes 10..16 reserved (must be zero: the routines
// abort otherwise). Each slice is SVL bytes (`rdsvl`/`addsvl`), stored with
// `str za[w12, 0]`, which needs PSTATE.ZA but not streaming mode. The
// targets have no SME2, so there is no ZT0 to save.
//
// Register use, as the ABI requires: `__arm_tpidr2_save` and
// `__arm_za_disable` change only x16, x17 (and the flags) and preserve every
// other register (x12 is saved on the stack while it indexes slices);
// `__arm_tpidr2_restore` takes the block in x0 and changes only x16, x17 and
// the flags; `__arm_get_current_vg` returns in x0 and changes nothing else.

#if defined(__aarch64__)
#include <sys/auxv.h>

#define SCALETUNE_HWCAP_SVE (1UL << 22)

// Whether normal mode has SVE, read once before main.
__attribute__((used)) static unsigned char scaletune_sme_has_sve;

__attribute__((constructor)) static void scaletune_sme_init(void) {
    scaletune_sme_has_sve = (getauxval(AT_HWCAP) & SCALETUNE_HWCAP_SVE) != 0;
}

__asm__(
    "  .arch_extension sme\n"
    "  .text\n"
    // abort() in normal mode (the caller may be streaming).
    "  .p2align 2\n"
    "  .type scaletune_sme_abort, %function\n"
    "scaletune_sme_abort:\n"
    "  smstop sm\n"
    "  bl abort\n"
    "  .size scaletune_sme_abort, .-scaletune_sme_abort\n"

    "  .globl __arm_tpidr2_save\n"
    "  .p2align 2\n"
    "  .type __arm_tpidr2_save, %function\n"
    "__arm_tpidr2_save:\n"
    "  mrs x16, TPIDR2_EL0\n"
    "  cbz x16, 2f\n"                // no lazy save pending
    "  ldr x17, [x16, #8]\n"         // bytes 8..16: slices and reserved
    "  lsr x17, x17, #16\n"          // the reserved bytes
    "  cbnz x17, scaletune_sme_abort\n"
    "  ldrh w17, [x16, #8]\n"        // num_za_save_slices
    "  cbz w17, 2f\n"
    "  ldr x16, [x16]\n"             // za_save_buffer
    "  str x12, [sp, #-16]!\n"
    "  mov w12, #0\n"
    "1:\n"
    "  str za[w12, 0], [x16]\n"
    "  addsvl x16, x16, #1\n"
    "  add w12, w12, #1\n"
    "  cmp w12, w17\n"
    "  b.lo 1b\n"
    "  ldr x12, [sp], #16\n"
    "2:\n"
    "  ret\n"
    "  .size __arm_tpidr2_save, .-__arm_tpidr2_save\n"

    "  .globl __arm_tpidr2_restore\n"
    "  .p2align 2\n"
    "  .type __arm_tpidr2_restore, %function\n"
    "__arm_tpidr2_restore:\n"
    "  ldr x17, [x0, #8]\n"
    "  lsr x17, x17, #16\n"
    "  cbnz x17, scaletune_sme_abort\n"
    "  ldrh w17, [x0, #8]\n"
    "  cbz w17, 2f\n"
    "  ldr x16, [x0]\n"
    "  str x12, [sp, #-16]!\n"
    "  mov w12, #0\n"
    "1:\n"
    "  ldr za[w12, 0], [x16]\n"
    "  addsvl x16, x16, #1\n"
    "  add w12, w12, #1\n"
    "  cmp w12, w17\n"
    "  b.lo 1b\n"
    "  ldr x12, [sp], #16\n"
    "2:\n"
    "  ret\n"
    "  .size __arm_tpidr2_restore, .-__arm_tpidr2_restore\n"

    "  .globl __arm_za_disable\n"
    "  .p2align 2\n"
    "  .type __arm_za_disable, %function\n"
    "__arm_za_disable:\n"
    "  stp x29, x30, [sp, #-16]!\n"
    "  mov x29, sp\n"
    "  bl __arm_tpidr2_save\n"
    "  msr TPIDR2_EL0, xzr\n"
    "  smstop za\n"
    "  ldp x29, x30, [sp], #16\n"
    "  ret\n"
    "  .size __arm_za_disable, .-__arm_za_disable\n"

    "  .globl __arm_get_current_vg\n"
    "  .p2align 2\n"
    "  .type __arm_get_current_vg, %function\n"
    "__arm_get_current_vg:\n"
    "  mrs x0, SVCR\n"
    "  tbz x0, #0, 1f\n"              // not streaming
    "  rdsvl x0, #1\n"                // streaming: SVL bytes / 8
    "  lsr x0, x0, #3\n"
    "  ret\n"
    "1:\n"
    "  adrp x0, scaletune_sme_has_sve\n"
    "  ldrb w0, [x0, :lo12:scaletune_sme_has_sve]\n"
    "  cbz w0, 2f\n"
    "  .arch_extension sve\n"
    "  cntd x0\n"
    "2:\n"
    "  ret\n"
    "  .size __arm_get_current_vg, .-__arm_get_current_vg\n");
#endif
