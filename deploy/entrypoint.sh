#!/bin/sh
# The container's entry point: one image, the role as the first argument.
#
#   web [serve options]   prepare the data folder, then serve (JEZERO_BIND, JEZERO_WORKERS)
#   worker                prepare the data folder, then run the background worker
#   prepare               prepare the data folder, then exit
#   VERB [arguments]      any other `jezero` verb, as is: `backup /data/backups/x.sqlite3`,
#                         `check`, `client add laptop`, … (an unknown verb exits 2, saying so)
#
# Preparing is `jezero init` (data folder, config, secret key, migrations, admin user; it says
# "skipped" for what exists) under an exclusive lock on a file in the data folder, so a web and
# a worker container starting together on one volume never race: the first applies the
# migrations, the second waits, then finds nothing to do. The admin user's password comes from
# JEZERO_ADMIN_PASSWORD(_FILE); without it, no admin is made and this log shows a one-time
# setup code for the /setup/ page (it stops working once an admin exists).
#
# The image makes /data belong to its user (uid 10001), and a new named volume takes that
# ownership from the image: nothing here changes owners at boot. A bind-mounted host folder
# must be given to that uid once (`chown 10001:10001 FOLDER`); otherwise this says so and stops.
set -eu

data=${JEZERO_DATA_DIR:-data}

prepare() {
    if [ ! -d "$data" ]; then
        (umask 027 && mkdir -p "$data")  # as `jezero init` would make it: 0750
    fi
    if [ ! -w "$data" ] || [ ! -x "$data" ]; then
        echo "entrypoint: the data folder $data is not writable by uid $(id -u):" \
             "give it to that user once (chown -R $(id -u):$(id -g) on the host folder)" >&2
        exit 1
    fi
    # No admin and no JEZERO_ADMIN_PASSWORD(_FILE): no password is made (it would outlive the
    # container in its log); init prints a one-time setup code for /setup/ instead.
    flock "$data/.init.lock" jezero init --setup-page
}

role=${1:-}
case $role in
    web)
        shift
        prepare
        exec jezero serve "$@"
        ;;
    worker)
        shift
        prepare
        exec jezero worker "$@"
        ;;
    prepare)
        shift
        prepare
        ;;
    *)
        exec jezero "$@"
        ;;
esac
