{ "targets": [ { "target_name": "sendfile_control", "sources": [ "sendfile.c" ] } ] }
