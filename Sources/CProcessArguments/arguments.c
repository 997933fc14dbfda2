#include "CProcessArguments.h"

static int saved_count;
static char **saved_arguments;

/* glibc calls the program's initialisers with (argc, argv, envp). */
__attribute__((constructor))
static void chorus_save_process_arguments(int count, char **arguments, char **environment) {
    (void)environment;
    if (count > 0 && arguments != 0) {
        saved_count = count;
        saved_arguments = arguments;
    }
}

int chorus_process_argument_count(void) {
    return saved_count;
}

const char *chorus_process_argument(int index) {
    if (index < 0 || index >= saved_count) return 0;
    return saved_arguments[index];
}
