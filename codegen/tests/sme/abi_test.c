#include <stdio.h>
#include <stdint.h>
#include <string.h>
void __arm_tpidr2_save(void); void __arm_tpidr2_restore(void *);
struct blk { void *buf; uint16_t n; uint8_t res[6]; };
static long svl(void) { long x; __asm__ volatile(".arch_extension sme\n rdsvl %0, #1" : "=r"(x)); return x; }
int main(void) {
  long n = svl();
  static unsigned char save[256*256], back[256*256];
  memset(save, 0, sizeof save);
  // ZA on; fill row i of za (bytes) with value i via a ldr za from a pattern buffer.
  __asm__ volatile(".arch_extension sme\n smstart za");
  static unsigned char pat[256*256];
  for (long i = 0; i < n; i++) memset(pat + i*n, (int)i + 1, n);
  for (long i = 0; i < n; i++) __asm__ volatile(".arch_extension sme\n mov w12, %w0\n ldr za[w12, 0], [%1]" :: "r"(i), "r"(pat + i*n) : "w12", "memory");
  struct blk b = { save, (uint16_t)n, {0} };
  __asm__ volatile(".arch_extension sme\n msr TPIDR2_EL0, %0" :: "r"(&b));
  __arm_tpidr2_save();
  __asm__ volatile(".arch_extension sme\n msr TPIDR2_EL0, xzr\n zero {za}");
  int ok = memcmp(save, pat, n*n) == 0;
  __arm_tpidr2_restore(&b);
  for (long i = 0; i < n; i++) __asm__ volatile(".arch_extension sme\n mov w12, %w0\n str za[w12, 0], [%1]" :: "r"(i), "r"((char*)back + i*n) : "w12", "memory");
  __asm__ volatile(".arch_extension sme\n smstop za");
  ok &= memcmp(back, pat, n*n) == 0;
  printf("svl=%ld saved=%d\n", n, ok);
  return !ok;
}
