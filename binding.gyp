# symphony's native addon. Built by scripts/build.js, which passes:
#   --sy_allocator=jemalloc|system   which allocator backs src/base/sy_alloc.c
#   --sy_jemalloc_dir=DIR            jemalloc's build folder (deps/jemalloc.sh)
#   --sy_lg_page=N                   its page size (lg2), recorded in the build marker
#   --sy_glibc_floor=FILE            (prebuilds) a header forced into every file,
#                                    binding/glibc_floor.h for the glibc targets
#   --sy_openssl_dir=DIR             the private OpenSSL's build folder
#                                    (deps/openssl.sh): TLS (src/tls) is built in,
#                                    its headers searched before Node's own
#   --sy_libdeflate_dir=DIR          libdeflate's build folder (deps/libdeflate.sh):
#                                    permessage-deflate (src/io/model/sy_deflate.c)
#   --sy_hiredis_dir=DIR             hiredis' build folder (deps/hiredis.sh): the
#                                    Redis bus (src/bus/sy_redis_alloc.c routes its memory)
#   --sy_yyjson_dir=DIR              yyjson's build folder (deps/yyjson.sh): the JSON
#                                    reader (src/base/sy_json.c routes its memory)
#   --sy_testing=1                   (scripts/build.js --testing) a testing build:
#                                    SY_TESTING defined and binding/testing.c
#                                    compiled (_testAlloc/_testFree and the
#                                    test-only hooks of src/); never shipped
#
# The source lists: the *.c files of the folders named, no dot files, sorted
# together by code unit: what `ls -1 src/*.c ...` gave in the C locale,
# listed by node (on PATH wherever node-gyp runs) because Windows' cmd has
# neither ls nor globs. Inline rather than a script under scripts/: the
# package (package.json's files) ships only the scripts it names. Keep the
# command free of $ ` % ! and of "<(" or ">(": it goes through sh or cmd,
# and gyp reads those as its own syntax.
#
# Windows (OS=="win"): node-gyp with MSVC (cl.exe, msbuild), the path of a
# hosted windows-latest runner (.github/workflows/windows.yml). NOT YET RUN:
# written from the mingw-w64 build of scripts/windows-gate.js (same defines,
# same system libraries). The sources no longer use what MSVC has not and
# mingw-w64 has (pthread.h, unistd.h, strings.h, sys/time.h, clock_gettime,
# nanosleep, ssize_t, GNU attributes: src/base/sy_thread.h, sy_clock.h and
# sy_port.h stand for them; the gate parses every file as MSVC's C11 with
# clang, which is not cl.exe). scripts/build.js on win32 builds the deps by
# the MSVC mode of deps/*.sh (--host x86_64-pc-windows-msvc --cc cl), which
# makes in each build folder the Linux file names with .lib (libdeflate.lib,
# libhiredis.lib, libyyjson.lib; OpenSSL's VC-WIN64A static build's own
# libssl.lib and libcrypto.lib), compiled with /MT (node-gyp's Release
# runtime library): checked on Linux with clang-cl and llvm-lib
# (scripts/msvc-deps-check.js), never yet with cl.exe. The system
# allocator only (jemalloc is refused below, and by scripts/build.js).
{
  'variables': {
    # jemalloc by default; the system allocator on Windows, its only one for now.
    'conditions': [
      ['OS=="win"', {'sy_allocator%': 'system'}, {'sy_allocator%': 'jemalloc'}],
    ],
    'sy_jemalloc_dir%': '',
    'sy_lg_page%': '0',
    'sy_glibc_floor%': '',
    'sy_openssl_dir%': '',
    'sy_libdeflate_dir%': '',
    'sy_hiredis_dir%': '',
    'sy_yyjson_dir%': '',
    'sy_testing%': 0,
  },
  'targets': [
    {
      'target_name': 'symphony',
      'sources': ["<!@(node -p \"['src', 'src/base', 'src/proto', 'src/net', 'src/io', 'src/io/model', 'src/io/loop', 'src/io/conn', 'src/io/wire', 'src/io/app', 'src/bus', 'binding'].flatMap((d) => require('fs').readdirSync(d).filter((f) => f.endsWith('.c') && f.indexOf('.') > 0).map((f) => d + '/' + f)).sort().join(' ')\")"],
      'include_dirs': ['src', '<(sy_libdeflate_dir)/include', '<(sy_hiredis_dir)/include', '<(sy_yyjson_dir)/include'],
      'defines': ['NAPI_VERSION=8', 'SY_LG_PAGE=<(sy_lg_page)'],
      'cflags_c': [
        '-std=c11', '-Wall', '-Wextra', '-Werror', '-O2',
        '-fvisibility=hidden', '-fno-strict-aliasing',
      ],
      'ldflags': [
        '-static-libgcc',
        '-Wl,--version-script=<(module_root_dir)/binding/exports.map',
        '-Wl,-z,now',
        # No symbol of a static library (jemalloc, OpenSSL, libdeflate, hiredis, yyjson) is exported.
        '-Wl,--exclude-libs,ALL',
        # Only what is reached (OpenSSL is built one section per function).
        '-Wl,--gc-sections',
        # Never unmapped by dlclose (Node unloads an addon when the last
        # worker that loaded it exits): jemalloc registers pthread key
        # destructors that run at every thread's exit, so its code must stay.
        '-Wl,-z,nodelete',
      ],
      'conditions': [
        # The libraries: static archives everywhere; on Windows MSVC's .lib
        # and the system's import libraries (Winsock, BCryptGenRandom, and
        # what OpenSSL's Windows code calls: CryptoAPI, the registry, the
        # window station check). No pthread library on Windows: MSVC has
        # none, and src/base/sy_thread.h uses Windows' own threads there.
        ['OS=="win"', {
          'libraries': [
            '<(sy_libdeflate_dir)/libdeflate.lib', '<(sy_hiredis_dir)/libhiredis.lib', '<(sy_yyjson_dir)/libyyjson.lib',
            'ws2_32.lib', 'bcrypt.lib', 'crypt32.lib', 'advapi32.lib', 'user32.lib',
          ],
        }, {
          'libraries': ['<(sy_libdeflate_dir)/libdeflate.a', '<(sy_hiredis_dir)/libhiredis.a', '<(sy_yyjson_dir)/libyyjson.a', '-lpthread'],
        }],
        # One poller backend per system (src/net/sy_poll.h).
        ['OS=="linux"', {
          'sources!': ['src/net/sy_poll_kqueue.c', 'src/net/sy_poll_afd.c'],
        }, 'OS=="win"', {
          'sources!': ['src/net/sy_poll_epoll.c', 'src/net/sy_poll_kqueue.c'],
        }, {
          'sources!': ['src/net/sy_poll_epoll.c', 'src/net/sy_poll_afd.c'],
        }],
        # macOS: node-gyp ignores cflags_c and ldflags there and takes
        # xcode_settings. The same warnings and visibility; ld64's
        # exported symbols list is the version script's twin (the two N-API
        # entry points only: no jemalloc, OpenSSL, libdeflate or hiredis
        # symbol leaves the bundle); -dead_strip is --gc-sections'. ld64 has
        # no --exclude-libs (the list does its work) and a bundle is never
        # unloaded by dyld while it has thread-local destructors, so no
        # -z nodelete. MACOSX_DEPLOYMENT_TARGET 10.15: Node 20's own floor
        # on Intel Macs; on Apple Silicon the compiler raises it to 11.0,
        # the first macOS that runs there (scripts/macos-gate.js checks both).
        ['OS=="mac"', {
          'xcode_settings': {
            'MACOSX_DEPLOYMENT_TARGET': '10.15',
            'GCC_SYMBOLS_PRIVATE_EXTERN': 'YES',
            'DEAD_CODE_STRIPPING': 'YES',
            'OTHER_CFLAGS': [
              '-std=c11', '-Wall', '-Wextra', '-Werror', '-O2',
              '-fvisibility=hidden', '-fno-strict-aliasing',
            ],
            'OTHER_LDFLAGS': [
              '-Wl,-exported_symbols_list,<(module_root_dir)/binding/exports.darwin',
              '-Wl,-dead_strip',
            ],
          },
        }],
        # Windows with MSVC: node-gyp ignores cflags_c and ldflags there and
        # takes msvs_settings. /std:c11 for the C files (MSVC keeps it apart
        # from the -std:c++NN of common.gypi, which is for the one C++ file,
        # node-gyp's delay-load hook), and <stdatomic.h>, which MSVC gives
        # only behind /experimental:c11atomics (VS 2022 17.5 or later). The
        # defines of scripts/windows-gate.js: Windows 10's API, and
        # windows.h without winsock.h (src/base/sy_inet.h includes
        # winsock2.h). No /WX yet: MSVC's warnings have never been seen. A
        # DLL exports only what is __declspec(dllexport)ed (NAPI_MODULE_INIT's
        # two entry points), so nothing stands for exports.map. Untested.
        ['OS=="win"', {
          'defines': ['_WIN32_WINNT=0x0A00', 'WIN32_LEAN_AND_MEAN'],
          'msvs_settings': {
            'VCCLCompilerTool': {
              'AdditionalOptions': ['/std:c11', '/experimental:c11atomics'],
            },
          },
        }],
        ['sy_testing==1', {
          'defines': ['SY_TESTING'],
        }, {
          'sources!': ['binding/testing.c'],
        }],
        ['sy_glibc_floor!=""', {
          'cflags_c': ['-include', '<(sy_glibc_floor)'],
          'sources': ['binding/glibc/compat.c'],
        }],
        ['sy_openssl_dir!=""', {
          # TLS, and tokens' verification (src/auth: OpenSSL's signatures).
          'sources': ["<!@(node -p \"['src/tls', 'src/auth'].flatMap((d) => require('fs').readdirSync(d).filter((f) => f.endsWith('.c') && f.indexOf('.') > 0).map((f) => d + '/' + f)).sort().join(' ')\")"],
          'defines': ['SY_WITH_TLS'],
          # Node's own OpenSSL headers are not in the --nodedir that
          # scripts/node-headers.js makes; sy_tls.c refuses anything older
          # than 3.5, so a wrong header fails the build.
          'include_dirs': ['<(sy_openssl_dir)/include'],
          'conditions': [
            ['OS=="win"', {
              'libraries': ['<(sy_openssl_dir)/libssl.lib', '<(sy_openssl_dir)/libcrypto.lib'],
            }, {
              'libraries': ['<(sy_openssl_dir)/libssl.a', '<(sy_openssl_dir)/libcrypto.a'],
            }],
          ],
        }],
        # No jemalloc on Windows for now: the system allocator only
        # (SY_LG_PAGE stays 0). Asking for jemalloc there stops gyp with
        # "Undefined variable" naming the reason, rather than build a
        # system-allocator file under a jemalloc name.
        ['sy_allocator!="system" and OS=="win"', {
          'defines': ['<(jemalloc_is_not_built_on_windows__use_sy_allocator_system)'],
        }],
        ['sy_allocator=="jemalloc"', {
          'defines': ['SY_USE_JEMALLOC'],
          'include_dirs': ['<(sy_jemalloc_dir)/include'],
          'libraries': ['<(sy_jemalloc_dir)/lib/libjemalloc_pic.a'],
        }],
      ],
    },
  ],
}
