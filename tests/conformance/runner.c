/* placeholder: replaced by the conformance runner */
#include <stdio.h>
int main(void) { fprintf(stderr, "runner not written yet\n"); return 1; }
