#ifndef CHORUS_CSDL2_SHIM_H
#define CHORUS_CSDL2_SHIM_H

#include <SDL2/SDL.h>
#include <SDL2/SDL_ttf.h>

// SDL_WINDOWPOS_* are function-like macros, which Swift's importer skips;
// everything else this package uses (SDL_INIT_VIDEO, SDL_BUTTON_LEFT,
// SDL_PIXELFORMAT_*, SDLK_*, SDL_HINT_*) imports as is.

static inline int chorus_sdl_windowpos_undefined(void) {
    return (int)SDL_WINDOWPOS_UNDEFINED;
}

static inline int chorus_sdl_windowpos_centered(void) {
    return (int)SDL_WINDOWPOS_CENTERED;
}

// glibc declares pthread_setname_np only under _GNU_SOURCE, which Swift's
// Glibc module is built without; naming the window thread helps `top -H`
// and debuggers, so declare it here (the prototype is glibc's own).
#include <pthread.h>
extern int pthread_setname_np(pthread_t thread, const char *name);

static inline void chorus_name_current_thread(const char *name) {
    (void)pthread_setname_np(pthread_self(), name);
}

#endif
