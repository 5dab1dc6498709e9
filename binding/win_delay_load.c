/*
 * win_delay_load.c — on Windows with mingw-w64, Node's N-API is found in
 * the process that loaded the addon, whatever its executable is called.
 *
 * The DLL imports the N-API functions from "node.exe" through a delay-load
 * import library (scripts/windows-gate.js: dlltool --output-delaylib), so
 * they are bound at their first call, not when Windows maps the DLL. Before
 * binding, the delay-load helper calls this hook, which hands it the
 * process's own executable instead of loading a file named node.exe: the
 * addon then also loads in a node.exe renamed, or in a host that embeds
 * Node (Electron), as node-gyp's win_delay_load_hook.cc does for MSVC
 * builds (where node-gyp adds its own hook, so this file is empty).
 */
#if defined(_WIN32) && defined(__MINGW32__)

#include <windows.h>

#include <delayimp.h>
#include <string.h>

static FARPROC WINAPI sy_win_delay_load_hook(unsigned event, PDelayLoadInfo info) {
    if (event != dliNotePreLoadLibrary || info == NULL || info->szDll == NULL)
        return NULL;
    if (_stricmp(info->szDll, "node.exe") != 0)
        return NULL;
    return (FARPROC)GetModuleHandleA(NULL);
}

PfnDliHook __pfnDliNotifyHook2 = sy_win_delay_load_hook;

#else

/* Nothing here for other systems and compilers (ISO C wants a declaration). */
typedef int sy_win_delay_load_unused;

#endif
