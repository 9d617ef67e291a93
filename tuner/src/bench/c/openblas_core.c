/* Prints the name of the OpenBLAS core whose kernels the library runs on
 * this machine (after OPENBLAS_CORETYPE, if set): `scaletune-openblas: NAME`.
 * Linked with -lopenblas; the prototype is declared here so that no include
 * path depends on which OpenBLAS variant is installed.
 */
#include <stdio.h>

extern char *openblas_get_corename(void);

int main(void) {
    printf("scaletune-openblas: %s\n", openblas_get_corename());
    return 0;
}
