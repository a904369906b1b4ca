/* api-openapi.c: GET /openapi.json — the API's OpenAPI document, docs/openapi.json as it was at
 * build time (openapi-json.c is generated from it by controller/local.mk), sent byte for byte. */
#include <errno.h>
#include <string.h>

#include "api.h"

void api_handle_openapi(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        int fd;
        int r = api_text_to_memfd("cgorch-openapi", api_openapi_json, api_openapi_json_size, &fd);
        if (r < 0)
                return http_response_error(resp, 500, "internal error: %s", strerror(-r));
        resp->status = 200;
        resp->has_file = true;
        resp->file_fd = fd;
        resp->file_size = api_openapi_json_size;
        resp->file_content_type = "application/json";
}
