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
#                                    permessage-deflate (src/io/sy_deflate.c)
#   --sy_hiredis_dir=DIR             hiredis' build folder (deps/hiredis.sh): the
#                                    Redis bus (src/bus/sy_redis_alloc.c routes its memory)
#   --sy_yyjson_dir=DIR              yyjson's build folder (deps/yyjson.sh): the JSON
#                                    reader (src/base/sy_json.c routes its memory)
#   --sy_testing=1                   (scripts/build.js --testing) a testing build:
#                                    SY_TESTING defined and binding/testing.c
#                                    compiled (_testAlloc/_testFree and the
#                                    test-only hooks of src/); never shipped
{
  'variables': {
    'sy_allocator%': 'jemalloc',
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
      'sources': ['<!@(ls -1 src/*.c src/base/*.c src/proto/*.c src/net/*.c src/io/*.c src/bus/*.c binding/*.c)'],
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
      'libraries': ['<(sy_libdeflate_dir)/libdeflate.a', '<(sy_hiredis_dir)/libhiredis.a', '<(sy_yyjson_dir)/libyyjson.a', '-lpthread'],
      'conditions': [
        # One poller backend per system (src/net/sy_poll.h).
        ['OS=="linux"', {
          'sources!': ['src/net/sy_poll_kqueue.c', 'src/net/sy_poll_wsapoll.c'],
        }, 'OS=="win"', {
          'sources!': ['src/net/sy_poll_epoll.c', 'src/net/sy_poll_kqueue.c'],
        }, {
          'sources!': ['src/net/sy_poll_epoll.c', 'src/net/sy_poll_wsapoll.c'],
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
          'sources': ['<!@(ls -1 src/tls/*.c src/auth/*.c)'],
          'defines': ['SY_WITH_TLS'],
          # Node's own OpenSSL headers are not in the --nodedir that
          # scripts/node-headers.js makes; sy_tls.c refuses anything older
          # than 3.5, so a wrong header fails the build.
          'include_dirs': ['<(sy_openssl_dir)/include'],
          'libraries': ['<(sy_openssl_dir)/libssl.a', '<(sy_openssl_dir)/libcrypto.a'],
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
