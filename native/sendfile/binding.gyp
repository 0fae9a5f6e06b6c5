{ "targets": [ { "target_name": "svc_sendfile", "sources": [ "sendfile.c" ], "cflags": [ "-O2", "-Wall" ] } ] }
