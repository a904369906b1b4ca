/* api.h: the REST endpoints of docs/api.md — the route table and handlers that turn cluster
 * and store results into HTTP statuses and JSON. */
#pragma once

#include "cluster.h"
#include "http-server.h"
#include "store.h"

typedef struct Api {
        Cluster *cluster;
        Store *store;
        void (*on_change)(void *userdata);   /* called after a request changed state; may be NULL */
        void *on_change_userdata;
} Api;

extern const HttpRoute api_routes[];
extern const size_t api_n_routes;
