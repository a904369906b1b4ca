/* api-metrics.c: GET /metrics (Prometheus text format) and the server's hook that counts every
 * answered request. The scrape reads what STATUS= reads (the jobs counted by state) and the
 * node rows; everything else is counted in memory as it happens (controller-metrics.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"

int api_text_to_memfd(const char *name, const char *text, size_t size, int *ret_fd) {
        int fd = memfd_create(name, MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (size_t done = 0; done < size;) {
                ssize_t n = write(fd, text + done, size - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        int r = n < 0 ? -errno : -EIO;
                        close(fd);
                        return r;
                }
                done += (size_t) n;
        }
        *ret_fd = fd;
        return 0;
}

void api_handle_metrics(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        static const char *const allowed[] = { NULL };
        Api *api = userdata;
        ControllerMetricsSnapshot snap = {};
        StoreNode *nodes = NULL;
        size_t n_nodes = 0;
        _cleanup_free_ ControllerMetricsNode *view = NULL;
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int fd = -EBADF;

        const char *unknown = http_request_query_unknown(req, allowed);
        if (unknown)
                return http_response_error(resp, 400, "%s: unknown query parameter", unknown);
        if (!api->metrics)
                return http_response_error(resp, 404, "/metrics: not served by this controller");

        /* The one pass over the jobs, as STATUS= makes; the nodes are few. */
        int r = store_job_count_by_state(api->store, snap.jobs);
        if (r >= 0)
                r = store_nodes_capacity(api->store, &nodes, &n_nodes);
        if (r < 0)
                return api_respond_errno(api->store, resp, r, NULL, "metrics");
        view = calloc(MAX(n_nodes, (size_t) 1), sizeof(ControllerMetricsNode));
        if (!view) {
                store_nodes_free(nodes, n_nodes);
                return api_respond_errno(api->store, resp, -ENOMEM, NULL, "metrics");
        }
        int64_t now_ms = controller_now_ms();
        for (size_t i = 0; i < n_nodes; i++)
                view[i] = (ControllerMetricsNode) {
                        .id = nodes[i].id,
                        .state = cluster_node_state(api->cluster, &nodes[i], now_ms),
                        .capacity_cpus = nodes[i].capacity_cpus,
                        .capacity_memory_bytes = nodes[i].capacity_memory_bytes,
                };
        snap.nodes = view;
        snap.n_nodes = n_nodes;
        snap.cluster = cluster_counters(api->cluster);
        snap.orchestrator = api->orchestrator ? orchestrator_counters(api->orchestrator) : NULL;
        snap.waits_held = api->waits ? node_waits_n_held(api->waits) : 0;
        snap.waits_woken = api->waits ? node_waits_n_woken(api->waits) : 0;
        snap.store_writable = store_fault(api->store, NULL, NULL) == STORE_FAULT_NONE;

        r = controller_metrics_render(api->metrics, &snap, &text, &size);
        store_nodes_free(nodes, n_nodes);
        if (r >= 0)
                r = api_text_to_memfd("cgorch-metrics", text, size, &fd);
        if (r < 0)
                return api_respond_errno(api->store, resp, r, NULL, "metrics");

        uint64_t dropped = controller_metrics_dropped(api->metrics);
        if (dropped > api->metrics_dropped_logged) {
                log_warning("Metrics: %" PRIu64 " observation(s) dropped so far for want of memory or room for a series.",
                            dropped);
                api->metrics_dropped_logged = dropped;
        }
        resp->status = 200;
        resp->has_file = true;
        resp->file_fd = fd;
        resp->file_size = size;
        resp->file_content_type = METRICS_CONTENT_TYPE;
}

void api_answered(void *userdata, const HttpRoute *route, unsigned status) {
        Api *api = userdata;
        controller_metrics_http(api->metrics, route ? route->method : NULL, route ? route->pattern : NULL, status);
}

void api_connection_refused(void *userdata) {
        Api *api = userdata;
        controller_metrics_connection_refused(api->metrics);
}
