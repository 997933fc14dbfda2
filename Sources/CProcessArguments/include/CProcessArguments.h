#ifndef CHORUS_CPROCESSARGUMENTS_H
#define CHORUS_CPROCESSARGUMENTS_H

/* The process's arguments as the kernel passed them to the program, saved before main.

   Swift on Linux builds CommandLine.arguments by reading /proc/self/cmdline. With
   libfaketime preloaded straight from a shell (LD_PRELOAD=... FAKETIME=... chorus follow ...),
   that read comes back empty, and the program would run as if given no arguments. The C
   library hands every initialiser of the program the real argument vector; this keeps it. */

/* The number of arguments, the program's name included; 0 if none were saved. */
int chorus_process_argument_count(void);

/* Argument `index` (0 is the program's name), or a null pointer when out of range. */
const char *chorus_process_argument(int index);

#endif
