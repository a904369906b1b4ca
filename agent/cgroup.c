/* cgroup.c: the agent's cgroup backend (libcgroup for live v1 hierarchies, files elsewhere). */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libcgroup.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "fd-budget.h"
#include "log.h"
#include "macro.h"
#include "strv.h"

struct CgroupBackend {
        CgroupMode mode;
        char *fsroot;
        char *root;                                  /* the agent's subtree, relative */
        char *hierarchy[_CGROUP_CONTROLLER_MAX];     /* directory under fsroot; "" in v2; NULL: absent */
        bool libcgroup;                              /* v1 hierarchies go through libcgroup */
        int created_from[_CGROUP_CONTROLLER_MAX];    /* first level of root we created, -1: none */
};

/* Indexed by CgroupController: the v1 hierarchies, in the enum's order. */
static const char *const v1_controllers[] = { "cpu", "cpuacct", "memory", "freezer", "pids" };
_Static_assert(ELEMENTSOF(v1_controllers) == CGROUP_UNIFIED, "v1_controllers follows CgroupController");

CgroupMode cgroup_backend_mode(const CgroupBackend *b) {
        return b->mode;
}

bool cgroup_backend_uses_libcgroup(const CgroupBackend *b) {
        return b->libcgroup;
}

static bool via_libcgroup(const CgroupBackend *b, CgroupController c) {
        return b->libcgroup && c != CGROUP_UNIFIED;
}

static int libcgroup_errno(int r) {
        if (r == 0)
                return 0;
        if (r == ECGOTHER)
                return -(cgroup_get_last_errno() ?: EIO);
        if (r == ECGROUPNOTEXIST)
                return -ENOENT;
        if (r == ECGNONEMPTY)
                return -EBUSY;
        if (r == ECGROUPNOTOWNER || r == ECGROUPNOTALLOWED)
                return -EACCES;
        return -EIO;
}

/* The distinct hierarchies a task lives in: cpu and cpuacct co-mounted count once. */
static size_t backend_hierarchies(const CgroupBackend *b, CgroupController ret[static _CGROUP_CONTROLLER_MAX]) {
        size_t n = 0;

        for (CgroupController c = 0; c < _CGROUP_CONTROLLER_MAX; c++) {
                bool dup = false;

                if (!b->hierarchy[c])
                        continue;
                for (size_t i = 0; i < n; i++)
                        if (streq(b->hierarchy[ret[i]], b->hierarchy[c]))
                                dup = true;
                if (!dup)
                        ret[n++] = c;
        }
        return n;
}

static int task_relpath(const CgroupBackend *b, const char *task, char **ret) {
        char *p;

        if (!task)
                return (p = strdup(b->root)) ? (*ret = p, 0) : -ENOMEM;
        /* A task id is one path component; anything else could escape the subtree. */
        if (!cgroup_relpath_is_valid(task) || strchr(task, '/'))
                return -EINVAL;
        if (asprintf(&p, "%s/%s", b->root, task) < 0)
                return -ENOMEM;
        *ret = p;
        return 0;
}

/* The path of task's cgroup in controller c's hierarchy, or of file in it (file NULL: the
 * directory itself). */
static int task_file_path(const CgroupBackend *b, CgroupController c, const char *task, const char *file,
                          char **ret) {
        _cleanup_free_ char *rel = NULL;
        int r;

        if (c < 0 || c >= _CGROUP_CONTROLLER_MAX || !b->hierarchy[c])
                return -ENOENT;
        r = task_relpath(b, task, &rel);
        if (r < 0)
                return r;
        return cgroup_path_join(b->fsroot, b->hierarchy[c], rel, file, ret);
}

int cgroup_backend_path(const CgroupBackend *b, CgroupController c, const char *task, char **ret) {
        return task_file_path(b, c, task, NULL, ret);
}

static int read_file_text(const char *path, char **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, allocated = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t k;

                if (allocated - n < 4096) {
                        size_t m = allocated ? allocated * 2 : 4096;
                        char *p;

                        if (m > 1024 * 1024)
                                return -EFBIG;
                        p = realloc(buf, m + 1);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        allocated = m;
                }
                k = read(fd, buf + n, allocated - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        if (!buf && !(buf = malloc(1)))
                return -ENOMEM;
        buf[n] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}

static int write_file_text(const char *path, const char *value) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *line = NULL;
        ssize_t k;
        int n;

        /* No O_CREAT: cgroupfs files exist or the kernel does not support the knob. */
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        n = asprintf(&line, "%s\n", value);
        if (n < 0)
                return -ENOMEM;
        /* cgroupfs takes one write per value: a short write is an error, not a retry. */
        k = write(fd, line, (size_t) n);
        if (k < 0)
                return -errno;
        if (k != n)
                return -EIO;
        return 0;
}

/* One value of one controller file of a task (or of the root when task is NULL). */
static int backend_write(CgroupBackend *b, CgroupController c, const char *task, const char *file, const char *value) {
        _cleanup_free_ char *rel = NULL, *path = NULL;
        int r;

        if (!b->hierarchy[c])
                return -EOPNOTSUPP;
        r = task_relpath(b, task, &rel);
        if (r < 0)
                return r;

        if (via_libcgroup(b, c)) {
                struct cgroup *cg = cgroup_new_cgroup(rel);
                struct cgroup_controller *cc;

                if (!cg)
                        return -ENOMEM;
                cc = cgroup_add_controller(cg, cgroup_controller_to_string(c));
                r = cc ? cgroup_add_value_string(cc, file, value) : ECGFAIL;
                if (r == 0)
                        r = cgroup_modify_cgroup(cg);
                cgroup_free(&cg);
                if (r != 0)
                        return log_debug_errno(libcgroup_errno(r), "libcgroup: writing \"%s\" to %s:%s/%s: %s",
                                               value, cgroup_controller_to_string(c), rel, file, cgroup_strerror(r));
                return 0;
        }

        /* Direct write: the cgroup2 tree of a hybrid system (libcgroup 2.0.2 skips a cgroup2
         * mount whose cgroup.controllers is empty), pure v2 (see cgroup_backend_new) and fixture
         * trees (libcgroup only knows the hierarchies in /proc/mounts). */
        r = cgroup_path_join(b->fsroot, b->hierarchy[c], rel, file, &path);
        if (r < 0)
                return r;
        r = write_file_text(path, value);
        if (r < 0)
                return log_debug_errno(r, "Writing \"%s\" to %s: %m", value, path);
        return 0;
}

static int backend_read(CgroupBackend *b, CgroupController c, const char *task, const char *file, char **ret) {
        _cleanup_free_ char *rel = NULL, *path = NULL;
        int r;

        if (!b->hierarchy[c])
                return -EOPNOTSUPP;
        r = task_relpath(b, task, &rel);
        if (r < 0)
                return r;

        if (via_libcgroup(b, c)) {
                _cleanup_free_ char *text = NULL;
                size_t len = 0;
                char line[4096];
                void *handle = NULL;

                /* libcgroup 2.0.2 takes the file name as char * but does not modify it. */
                r = cgroup_read_value_begin(cgroup_controller_to_string(c), rel, (char *) file, &handle, line, sizeof line);
                while (r == 0) {
                        size_t k = strlen(line);
                        char *p = realloc(text, len + k + 1);

                        if (!p) {
                                cgroup_read_value_end(&handle);
                                return -ENOMEM;
                        }
                        text = p;
                        memcpy(text + len, line, k + 1);
                        len += k;
                        r = cgroup_read_value_next(&handle, line, sizeof line);
                }
                if (handle)
                        cgroup_read_value_end(&handle);
                if (r != ECGEOF)
                        return libcgroup_errno(r);
                if (!text && !(text = strdup("")))
                        return -ENOMEM;
                *ret = TAKE_PTR(text);
                return 0;
        }

        /* Direct read: same cases as backend_write. */
        r = cgroup_path_join(b->fsroot, b->hierarchy[c], rel, file, &path);
        if (r < 0)
                return r;
        return read_file_text(path, ret);
}

static int backend_read_uint64(CgroupBackend *b, CgroupController c, const char *task, const char *file, uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        int r = backend_read(b, c, task, file, &text);
        return r < 0 ? r : cgroup_parse_uint64(text, ret);
}

static int backend_read_keyed(CgroupBackend *b, CgroupController c, const char *task, const char *file,
                              const char *key, uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        int r = backend_read(b, c, task, file, &text);
        return r < 0 ? r : cgroup_parse_keyed(text, key, ret);
}

static int mkdir_direct(const CgroupBackend *b, CgroupController c, const char *rel) {
        _cleanup_free_ char *path = NULL;
        int r;

        /* Direct mkdir: same cases as backend_write. */
        r = cgroup_path_join(b->fsroot, b->hierarchy[c], rel, NULL, &path);
        if (r < 0)
                return r;
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return log_debug_errno(errno, "mkdir %s: %m", path);
        return 0;
}

static bool word_list_contains(const char *text, const char *word) {
        size_t n = strlen(word);

        for (const char *p = text; *p;) {
                p += strspn(p, " \n");
                size_t k = strcspn(p, " \n");
                if (k == n && strncmp(p, word, n) == 0)
                        return true;
                p += k;
        }
        return false;
}

/* v2 only: a child of rel gets a controller's files only if rel enables it in its
 * subtree_control. cpu and memory are required; pids is enabled where rel has it (its
 * cgroup.controllers lists it). Writes only what is missing. Returns whether pids is enabled
 * for rel's children. */
static int v2_enable_controllers(CgroupBackend *b, const char *rel) {
        _cleanup_free_ char *path = NULL, *text = NULL, *available = NULL, *avail_path = NULL;
        static const char *const wanted[] = { "cpu", "memory", "pids" };
        bool pids = false;
        char add[64] = "";
        int r;

        r = cgroup_path_join(b->fsroot, "", rel, "cgroup.subtree_control", &path);
        if (r < 0)
                return r;
        r = read_file_text(path, &text);
        if (r < 0)
                return log_error_errno(r, "Reading %s: %m", path);
        r = cgroup_path_join(b->fsroot, "", rel, "cgroup.controllers", &avail_path);
        if (r < 0)
                return r;
        /* Missing (a directory of a fixture tree the agent made): nothing beyond cpu and memory. */
        if (read_file_text(avail_path, &available) < 0)
                available = NULL;

        for (size_t i = 0; i < ELEMENTSOF(wanted); i++) {
                bool optional = streq(wanted[i], "pids");

                if (optional && !(available && word_list_contains(available, wanted[i])))
                        continue;
                if (optional)
                        pids = true;
                if (word_list_contains(text, wanted[i]))
                        continue;
                strcat(add, add[0] ? " +" : "+");
                strcat(add, wanted[i]);
        }
        if (!add[0])
                return pids;
        /* Direct write: libcgroup 2.0.2 would write "+cpu" into every ancestor from the mount
         * root down, including cgroups the agent does not own. */
        r = write_file_text(path, add);
        if (r < 0 && pids) {
                /* The kernel takes all of a write or none of it: try again without pids. */
                char *p = strstr(add, "+pids");

                log_debug_errno(r, "Enabling %s in %s: %m; trying again without pids", add, path);
                pids = false;
                if (p > add)
                        p--;
                *p = '\0';
                r = add[0] ? write_file_text(path, add) : 0;
        }
        if (r < 0)
                return log_error_errno(r, "Enabling %s in %s: %m", add, path);
        return pids;
}

static int libcgroup_create(CgroupBackend *b, const char *rel) {
        struct cgroup *cg = cgroup_new_cgroup(rel);
        int r = 0;

        if (!cg)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(v1_controllers) && r == 0; i++)
                if (b->hierarchy[i] && !cgroup_add_controller(cg, v1_controllers[i]))
                        r = ECGFAIL;
        if (r == 0)
                r = cgroup_create_cgroup(cg, 0);
        cgroup_free(&cg);
        if (r != 0)
                return log_error_errno(libcgroup_errno(r), "libcgroup: creating %s: %s", rel, cgroup_strerror(r));
        return 0;
}

/* Whether rel exists in every hierarchy libcgroup handles. */
static bool libcgroup_relpath_exists(CgroupBackend *b, const char *rel) {
        for (size_t i = 0; i < ELEMENTSOF(v1_controllers); i++) {
                _cleanup_free_ char *path = NULL;

                if (!b->hierarchy[i])
                        continue;
                if (cgroup_path_join(b->fsroot, b->hierarchy[i], rel, NULL, &path) < 0 || access(path, F_OK) < 0)
                        return false;
        }
        return true;
}

/* Creates rel in every hierarchy (missing parents too). */
static int create_relpath(CgroupBackend *b, const char *rel) {
        CgroupController hs[_CGROUP_CONTROLLER_MAX];
        size_t n = backend_hierarchies(b, hs);
        int r;

        /* cgroup_create_cgroup() of a cgroup that exists still walks its whole subtree and
         * chowns every file in it (70 000 chowns for the root of an agent with 1000 tasks, at
         * every start): there is nothing to create, so libcgroup is not asked. */
        if (b->libcgroup && !libcgroup_relpath_exists(b, rel)) {
                r = libcgroup_create(b, rel);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                if (via_libcgroup(b, hs[i]))
                        continue;
                /* mkdir -p, level by level, from the top. */
                for (const char *p = rel; p;) {
                        const char *slash = strchr(p, '/');
                        _cleanup_free_ char *prefix = strndup(rel, slash ? (size_t) (slash - rel) : strlen(rel));

                        if (!prefix)
                                return -ENOMEM;
                        r = mkdir_direct(b, hs[i], prefix);
                        if (r < 0)
                                return r;
                        p = slash ? slash + 1 : NULL;
                }
        }
        return 0;
}

/* rmdir of rel in every hierarchy; -EBUSY if some hierarchy still holds processes or children. */
static int remove_relpath(CgroupBackend *b, const char *rel) {
        CgroupController hs[_CGROUP_CONTROLLER_MAX];
        size_t n = backend_hierarchies(b, hs);
        int ret = 0;

        for (size_t i = 0; i < n; i++) {
                int r = 0;

                if (via_libcgroup(b, hs[i])) {
                        struct cgroup *cg = cgroup_new_cgroup(rel);

                        if (!cg)
                                return -ENOMEM;
                        if (!cgroup_add_controller(cg, cgroup_controller_to_string(hs[i])))
                                r = -ENOMEM;
                        else
                                /* EMPTY_ONLY: never migrate processes to the parent. */
                                r = libcgroup_errno(cgroup_delete_cgroup_ext(cg, CGFLAG_DELETE_EMPTY_ONLY));
                        /* Gone already (or never made: a task from before the agent had this hierarchy). */
                        if (r == -ENOENT)
                                r = 0;
                        cgroup_free(&cg);
                } else {
                        _cleanup_free_ char *path = NULL;

                        /* Direct rmdir: same cases as backend_write. */
                        r = cgroup_path_join(b->fsroot, b->hierarchy[hs[i]], rel, NULL, &path);
                        if (r == 0 && rmdir(path) < 0 && errno != ENOENT)
                                r = -errno;
                }
                if (r == -ENOTEMPTY)
                        r = -EBUSY;
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

static int detect_v1(CgroupBackend *b) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *unified = NULL;
        DIR *d;
        struct dirent *de;
        int r = 0;

        d = opendir(b->fsroot);
        if (!d)
                return log_error_errno(errno, "Cannot open cgroup fs root %s: %m", b->fsroot);
        while ((de = readdir(d))) {
                struct stat st;

                if (de->d_name[0] == '.')
                        continue;
                /* Symlinks ("cpu" → "cpu,cpuacct") are aliases: the real directory names the hierarchy. */
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                r = strv_extend(&names, de->d_name);
                if (r < 0)
                        break;
        }
        closedir(d);
        if (r < 0)
                return r;

        for (size_t i = 0; i < ELEMENTSOF(v1_controllers); i++) {
                int k = cgroup_v1_pick_hierarchy(v1_controllers[i], names, strv_length(names));

                if (k < 0) {
                        /* A node without freezer still runs tasks; freeze then fails. */
                        if (i == CGROUP_FREEZER) {
                                log_warning("No freezer hierarchy under %s: freeze and thaw will fail.", b->fsroot);
                                continue;
                        }
                        /* Nor does one without pids: its tasks run without a pids limit. */
                        if (i == CGROUP_PIDS) {
                                log_warning("No pids hierarchy under %s: tasks run without a pids limit.", b->fsroot);
                                continue;
                        }
                        return log_error_errno(ENOMEDIUM, "No %s cgroup hierarchy under %s.", v1_controllers[i], b->fsroot);
                }
                b->hierarchy[i] = strdup(names[k]);
                if (!b->hierarchy[i])
                        return -ENOMEM;
        }

        r = cgroup_path_join(b->fsroot, "unified", NULL, "cgroup.controllers", &unified);
        if (r < 0)
                return r;
        if (access(unified, F_OK) == 0) {
                b->mode = CGROUP_MODE_HYBRID;
                b->hierarchy[CGROUP_UNIFIED] = strdup("unified");
                if (!b->hierarchy[CGROUP_UNIFIED])
                        return -ENOMEM;
        } else
                b->mode = CGROUP_MODE_V1;
        return 0;
}

/* libcgroup is used when its mount table (from /proc/mounts) has every v1 hierarchy exactly
 * where the agent found it; a fixture tree given with --cgroup-fs never matches. */
static bool libcgroup_matches(const CgroupBackend *b) {
        static int init_r = -1;

        if (init_r < 0)
                init_r = cgroup_init();
        if (init_r != 0) {
                log_debug("libcgroup: cgroup_init: %s", cgroup_strerror(init_r));
                return false;
        }
        for (size_t i = 0; i < ELEMENTSOF(v1_controllers); i++) {
                _cleanup_free_ char *mp = NULL, *ours = NULL;
                char a[PATH_MAX], c[PATH_MAX];

                if (!b->hierarchy[i])
                        continue;
                if (cgroup_get_subsys_mount_point(v1_controllers[i], &mp) != 0 || !mp)
                        return false;
                if (cgroup_path_join(b->fsroot, b->hierarchy[i], NULL, NULL, &ours) < 0)
                        return false;
                if (!realpath(mp, a) || !realpath(ours, c) || !streq(a, c))
                        return false;
        }
        return true;
}

int cgroup_backend_new(const char *fsroot, const char *root_relpath, CgroupBackend **ret) {
        _cleanup_(cgroup_backend_freep) CgroupBackend *b = NULL;
        _cleanup_free_ char *v2 = NULL;
        CgroupController hs[_CGROUP_CONTROLLER_MAX];
        size_t n;
        int r;

        if (!cgroup_relpath_is_valid(root_relpath))
                return log_error_errno(EINVAL, "Invalid cgroup root \"%s\": must be a relative path without . or .. components, "
                                       "none of them named as a cgroup's own files (tasks, notify_on_release, release_agent, "
                                       "cgroup.*, CONTROLLER.*).",
                                       root_relpath);

        b = calloc(1, sizeof *b);
        if (!b)
                return -ENOMEM;
        for (size_t i = 0; i < _CGROUP_CONTROLLER_MAX; i++)
                b->created_from[i] = -1;
        b->fsroot = strdup(fsroot);
        b->root = strdup(root_relpath);
        if (!b->fsroot || !b->root)
                return -ENOMEM;

        r = cgroup_path_join(fsroot, NULL, NULL, "cgroup.controllers", &v2);
        if (r < 0)
                return r;
        if (access(v2, F_OK) == 0) {
                /* Pure v2 goes to the files directly: libcgroup 2.0.2 enables controllers by
                 * writing every ancestor's subtree_control from the mount root down, touching
                 * cgroups the agent does not own; the one tree needs nothing else it offers. */
                b->mode = CGROUP_MODE_V2;
                for (size_t i = 0; i < _CGROUP_CONTROLLER_MAX; i++)
                        if (!(b->hierarchy[i] = strdup("")))
                                return -ENOMEM;
        } else {
                r = detect_v1(b);
                if (r < 0)
                        return r;
                b->libcgroup = libcgroup_matches(b);
        }

        /* Which levels of the root are ours: those missing now, in each hierarchy. */
        n = backend_hierarchies(b, hs);
        for (size_t i = 0; i < n; i++) {
                int level = 0;

                for (const char *p = root_relpath; p; level++) {
                        const char *slash = strchr(p, '/');
                        _cleanup_free_ char *prefix = strndup(root_relpath, slash ? (size_t) (slash - root_relpath) : strlen(root_relpath));
                        _cleanup_free_ char *path = NULL;

                        if (!prefix)
                                return -ENOMEM;
                        r = cgroup_path_join(fsroot, b->hierarchy[hs[i]], prefix, NULL, &path);
                        if (r < 0)
                                return r;
                        if (access(path, F_OK) < 0) {
                                b->created_from[hs[i]] = level;
                                break;
                        }
                        p = slash ? slash + 1 : NULL;
                }
        }

        r = create_relpath(b, root_relpath);
        if (r < 0)
                return log_error_errno(r, "Cannot create the agent cgroup root %s under %s: %m", root_relpath, fsroot);

        if (b->mode == CGROUP_MODE_V2) {
                /* Levels the agent created and its root need cpu and memory for their children;
                 * the parent of the first created level must already have them (Delegate=yes). */
                int from = b->created_from[CGROUP_UNIFIED];
                int level = 0;

                for (const char *p = root_relpath; p; level++) {
                        const char *slash = strchr(p, '/');
                        _cleanup_free_ char *prefix = strndup(root_relpath, slash ? (size_t) (slash - root_relpath) : strlen(root_relpath));

                        if (!prefix)
                                return -ENOMEM;
                        if ((from >= 0 && level >= from) || !slash) {
                                r = v2_enable_controllers(b, prefix);
                                if (r < 0)
                                        return r;
                                if (!slash && r == 0) {
                                        /* The root's children are the tasks. */
                                        log_warning("The pids controller is not available in %s/%s: tasks run without a pids limit.",
                                                    fsroot, root_relpath);
                                        free(b->hierarchy[CGROUP_PIDS]);
                                        b->hierarchy[CGROUP_PIDS] = NULL;
                                }
                        }
                        p = slash ? slash + 1 : NULL;
                }
        }

        log_debug("cgroup: mode %s under %s, root %s, %s", cgroup_mode_to_string(b->mode), fsroot, root_relpath,
                  b->libcgroup ? "v1 hierarchies through libcgroup" : "direct file access");
        *ret = TAKE_PTR(b);
        return 0;
}

CgroupBackend *cgroup_backend_free(CgroupBackend *b) {
        CgroupController hs[_CGROUP_CONTROLLER_MAX];
        size_t n;
        size_t levels = 1;

        if (!b)
                return NULL;

        for (const char *p = b->root ? b->root : ""; *p; p++)
                if (*p == '/')
                        levels++;

        /* The root itself, then the ancestors this backend created, deepest first, each only
         * if empty: rmdir refuses a cgroup with processes or children. */
        n = b->root && b->fsroot ? backend_hierarchies(b, hs) : 0;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *rel = strdup(b->root);
                int from = b->created_from[hs[i]];

                if (!rel)
                        break;
                for (int level = (int) levels - 1; level >= 0; level--) {
                        _cleanup_free_ char *path = NULL;
                        char *slash;

                        if (level < (int) levels - 1 && (from < 0 || level < from))
                                break;
                        /* Direct rmdir, also on libcgroup hierarchies: one hierarchy at a time,
                         * at shutdown, with the same EMPTY_ONLY semantics. */
                        if (cgroup_path_join(b->fsroot, b->hierarchy[hs[i]], rel, NULL, &path) < 0)
                                break;
                        if (rmdir(path) < 0 && errno != ENOENT) {
                                log_debug_errno(errno, "Leaving %s: %m", path);
                                break;
                        }
                        slash = strrchr(rel, '/');
                        if (!slash)
                                break;
                        *slash = '\0';
                }
        }

        for (size_t i = 0; i < _CGROUP_CONTROLLER_MAX; i++)
                free(b->hierarchy[i]);
        free(b->fsroot);
        free(b->root);
        free(b);
        return NULL;
}

int cgroup_task_create(CgroupBackend *b, const char *task) {
        _cleanup_free_ char *rel = NULL;
        int r;

        r = task_relpath(b, task, &rel);
        if (r < 0)
                return r;
        return create_relpath(b, rel);
}

int cgroup_task_attach(CgroupBackend *b, const char *task, pid_t pid) {
        _cleanup_free_ char *rel = NULL;
        char pid_str[32];
        int r;

        r = task_relpath(b, task, &rel);
        if (r < 0)
                return r;

        if (b->libcgroup) {
                struct cgroup *cg = cgroup_new_cgroup(rel);

                if (!cg)
                        return -ENOMEM;
                for (size_t i = 0; i < ELEMENTSOF(v1_controllers) && r == 0; i++)
                        if (b->hierarchy[i] && !cgroup_add_controller(cg, v1_controllers[i]))
                                r = ECGFAIL;
                if (r == 0)
                        r = cgroup_attach_task_pid(cg, pid);
                cgroup_free(&cg);
                if (r != 0)
                        return log_error_errno(libcgroup_errno(r), "libcgroup: attaching %d to %s: %s",
                                               (int) pid, rel, cgroup_strerror(r));
                if (b->mode == CGROUP_MODE_V1)
                        return 0;
        }

        snprintf(pid_str, sizeof pid_str, "%d", (int) pid);
        for (CgroupController c = 0; c < _CGROUP_CONTROLLER_MAX; c++) {
                bool dup = false;

                if (!b->hierarchy[c] || via_libcgroup(b, c))
                        continue;
                for (CgroupController e = 0; e < c; e++)
                        if (b->hierarchy[e] && !via_libcgroup(b, e) && streq(b->hierarchy[e], b->hierarchy[c]))
                                dup = true;
                if (dup)
                        continue;
                r = backend_write(b, c, task, "cgroup.procs", pid_str);
                if (r < 0)
                        return log_error_errno(r, "Attaching %d to %s (%s): %m", (int) pid, rel, cgroup_controller_to_string(c));
        }
        return 0;
}

int cgroup_task_set_limits(CgroupBackend *b, const char *task, const Limits *want, const Limits *current,
                           Limits *ret_applied) {
        CgroupWrite w[CGROUP_WRITES_MAX];
        Limits applied = { LIMIT_UNSET, LIMIT_UNSET, LIMIT_UNSET, LIMIT_UNSET, LIMIT_UNSET };
        const int64_t *from = &want->cpu_quota_us;
        int64_t *to = &applied.cpu_quota_us;
        int n, r = 0;

        n = cgroup_limits_to_writes(b->mode, want, current, w);
        if (n < 0)
                return n;
        for (int i = 0; i < n; i++) {
                r = backend_write(b, w[i].controller, task, w[i].file, w[i].value);
                if (r < 0) {
                        log_error_errno(r, "Setting %s=%s of task %s: %m", w[i].file, w[i].value, task);
                        break;
                }
                /* What is written is in force, even if a later write fails: the caller must
                 * know, or it takes its own value for someone else's change. */
                for (size_t k = 0; k < sizeof(Limits) / sizeof(int64_t); k++)
                        if (w[i].fields & (1u << k))
                                to[k] = from[k];
        }
        if (ret_applied)
                *ret_applied = applied;
        return r;
}

bool cgroup_backend_has_pids(const CgroupBackend *b) {
        return b->hierarchy[CGROUP_PIDS];
}

int cgroup_root_set_pids_max(CgroupBackend *b, uint64_t pids_max) {
        char value[32] = "max";
        if (pids_max == 0 || (pids_max != UINT64_MAX && pids_max > INT_MAX))
                return -EINVAL;
        if (!b->hierarchy[CGROUP_PIDS])
                return -EOPNOTSUPP;
        if (pids_max != UINT64_MAX)
                snprintf(value, sizeof value, "%" PRIu64, pids_max);
        /* A file that is not there is never created (a fixture tree, or v2 without pids for the
         * root): say so rather than make one. */
        _cleanup_free_ char *path = NULL;
        int r = task_file_path(b, CGROUP_PIDS, NULL, "pids.max", &path);
        if (r < 0)
                return r;
        if (access(path, F_OK) < 0)
                return -errno;
        return backend_write(b, CGROUP_PIDS, NULL, "pids.max", value);
}

int cgroup_task_set_pids_max(CgroupBackend *b, const char *task, uint64_t pids_max) {
        char value[32];

        if (!b->hierarchy[CGROUP_PIDS])
                return -EOPNOTSUPP;
        if (pids_max == 0 || pids_max > INT_MAX)
                return -EINVAL;
        snprintf(value, sizeof value, "%" PRIu64, pids_max);
        return backend_write(b, CGROUP_PIDS, task, "pids.max", value);
}

int cgroup_task_read_usage(CgroupBackend *b, const char *task, CgroupUsage *ret) {
        CgroupUsage u = {};
        int r;

        if (b->mode == CGROUP_MODE_V2) {
                uint64_t usec;

                r = backend_read_keyed(b, CGROUP_UNIFIED, task, "cpu.stat", "usage_usec", &usec);
                if (r < 0)
                        return r;
                u.cpu_usage_ns = usec * NSEC_PER_USEC;
                r = backend_read_uint64(b, CGROUP_UNIFIED, task, "memory.current", &u.memory_current_bytes);
                if (r < 0)
                        return r;
                /* memory.peak appeared in Linux 5.19. */
                r = backend_read_uint64(b, CGROUP_UNIFIED, task, "memory.peak", &u.memory_peak_bytes);
                if (r < 0 && r != -ENOENT)
                        return r;
                r = backend_read_keyed(b, CGROUP_UNIFIED, task, "memory.events", "oom_kill", &u.oom_kill);
                if (r < 0 && r != -ENOENT)
                        return r;
        } else {
                r = backend_read_uint64(b, CGROUP_CPUACCT, task, "cpuacct.usage", &u.cpu_usage_ns);
                if (r < 0)
                        return r;
                r = backend_read_uint64(b, CGROUP_MEMORY, task, "memory.usage_in_bytes", &u.memory_current_bytes);
                if (r < 0)
                        return r;
                r = backend_read_uint64(b, CGROUP_MEMORY, task, "memory.max_usage_in_bytes", &u.memory_peak_bytes);
                if (r < 0)
                        return r;
                /* oom_kill in memory.oom_control appeared in Linux 4.13. */
                r = backend_read_keyed(b, CGROUP_MEMORY, task, "memory.oom_control", "oom_kill", &u.oom_kill);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        *ret = u;
        return 0;
}

int cgroup_task_freeze(CgroupBackend *b, const char *task, bool frozen) {
        if (b->mode == CGROUP_MODE_V2)
                return backend_write(b, CGROUP_UNIFIED, task, "cgroup.freeze", frozen ? "1" : "0");
        /* v1 and hybrid: the v1 freezer owns freezing; both freezers at once would fight. */
        return backend_write(b, CGROUP_FREEZER, task, "freezer.state", frozen ? "FROZEN" : "THAWED");
}

int cgroup_task_frozen(CgroupBackend *b, const char *task) {
        _cleanup_free_ char *text = NULL;
        bool v2 = b->mode == CGROUP_MODE_V2;
        int r = backend_read(b, v2 ? CGROUP_UNIFIED : CGROUP_FREEZER, task, v2 ? "cgroup.freeze" : "freezer.state", &text);
        if (r < 0)
                return r;
        return v2 ? text[0] == '1' : strncmp(text, "THAWED", 6) != 0;
}

static int task_pids(CgroupBackend *b, const char *task, pid_t **ret) {
        CgroupController c = b->mode == CGROUP_MODE_V2 ? CGROUP_UNIFIED : CGROUP_MEMORY;
        _cleanup_free_ char *text = NULL;
        int r;

        r = backend_read(b, c, task, "cgroup.procs", &text);
        if (r < 0)
                return r;
        return cgroup_parse_pids(text, ret);
}

int cgroup_task_count_procs(CgroupBackend *b, const char *task) {
        return task_pids(b, task, NULL);
}

int cgroup_task_kill(CgroupBackend *b, const char *task) {
        int r;

        /* cgroup.kill (Linux 5.14) kills every process atomically, forks in flight included. */
        if (b->hierarchy[CGROUP_UNIFIED]) {
                r = backend_write(b, CGROUP_UNIFIED, task, "cgroup.kill", "1");
                if (r == 0) {
                        /* A task the v1 freezer holds (suspended, or fenced) dies of the
                         * SIGKILL only once thawed. */
                        if (b->mode != CGROUP_MODE_V2)
                                (void) cgroup_task_freeze(b, task, false);
                        return 0;
                }
                if (r != -ENOENT)
                        log_debug_errno(r, "cgroup.kill of %s failed, killing process by process: %m", task);
        }

        /* Process by process, frozen so nobody forks behind our back: a frozen task dies
         * of SIGKILL as soon as it is thawed. The caller watches the cgroup empty out. */
        _cleanup_free_ pid_t *pids = NULL;
        bool frozen = cgroup_task_freeze(b, task, true) >= 0;
        int n = task_pids(b, task, &pids);

        for (int i = 0; i < n; i++)
                if (kill(pids[i], SIGKILL) < 0 && errno != ESRCH)
                        log_debug_errno(errno, "kill(%d): %m", (int) pids[i]);
        if (frozen)
                (void) cgroup_task_freeze(b, task, false);
        return n < 0 ? n : 0;
}

int cgroup_task_signal(CgroupBackend *b, const char *task, int sig) {
        _cleanup_free_ pid_t *pids = NULL;
        int n = task_pids(b, task, &pids), sent = 0;

        /* A process forked after the list was read misses it: the SIGKILL after the grace (the
         * cgroup's, atomic) does not. */
        for (int i = 0; i < n; i++) {
                if (kill(pids[i], sig) >= 0)
                        sent++;
                else if (errno != ESRCH)
                        log_debug_errno(errno, "kill(%d, %d): %m", (int) pids[i], sig);
        }
        return n < 0 ? n : sent;
}

int cgroup_task_remove(CgroupBackend *b, const char *task) {
        _cleanup_free_ char *rel = NULL;
        int r;

        r = task_relpath(b, task, &rel);
        if (r < 0)
                return r;
        return remove_relpath(b, rel);
}

CgroupController cgroup_backend_procs_controller(const CgroupBackend *b) {
        return b->mode == CGROUP_MODE_V2 ? CGROUP_UNIFIED : CGROUP_MEMORY;
}

int cgroup_task_open(CgroupBackend *b, CgroupController c, const char *task, const char *file) {
        _cleanup_free_ char *path = NULL;
        int r, fd;

        r = task_file_path(b, c, task, file, &path);
        if (r < 0)
                return r;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : fd;
}

static int read_fd(int fd, bool single, char *buf, size_t size) {
        size_t n = 0;

        while (n < size - 1) {
                ssize_t k = read(fd, buf + n, size - 1 - n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (single)
                        break;
        }
        buf[n] = '\0';
        return 0;
}

int cgroup_task_read_direct(CgroupBackend *b, CgroupController c, const char *task, const char *file, char *buf,
                            size_t size) {
        _cleanup_close_ int fd = -EBADF;

        fd = cgroup_task_open(b, c, task, file);
        if (fd < 0)
                return fd;
        return read_fd(fd, false, buf, size);
}

void cgroup_task_dirs_init(CgroupTaskDirs *d) {
        for (size_t i = 0; i < _CGROUP_CONTROLLER_MAX; i++)
                d->fd[i] = -1;
}

static void task_dir_close(CgroupTaskDirs *d, CgroupController c) {
        close(d->fd[c]);
        d->fd[c] = -1;
        fd_budget_give();
}

void cgroup_task_dirs_done(CgroupTaskDirs *d) {
        for (CgroupController c = 0; c < _CGROUP_CONTROLLER_MAX; c++)
                if (d->fd[c] >= 0)
                        task_dir_close(d, c);
}

/* Keeps the directory open: -ENOBUFS when the descriptor budget is spent (fd-budget.h). */
static int task_dir_open(CgroupBackend *b, CgroupTaskDirs *d, CgroupController c, const char *task) {
        _cleanup_free_ char *path = NULL;
        int r, fd;

        r = task_file_path(b, c, task, NULL, &path);
        if (r < 0)
                return r;
        if (!fd_budget_take())
                return -ENOBUFS;
        fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                fd_budget_give();
                return -errno;
        }
        d->fd[c] = fd;
        return 0;
}

int cgroup_task_read_at(CgroupBackend *b, CgroupTaskDirs *d, CgroupController c, const char *task, const char *file,
                        bool single, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!d)
                return cgroup_task_read_direct(b, c, task, file, buf, size);
        if (c < 0 || c >= _CGROUP_CONTROLLER_MAX)
                return -ENOENT;
        for (unsigned attempt = 0;; attempt++) {
                bool fresh = d->fd[c] < 0;

                if (fresh) {
                        r = task_dir_open(b, d, c, task);
                        if (r == -ENOBUFS)
                                return cgroup_task_read_direct(b, c, task, file, buf, size);
                        if (r < 0)
                                return r;
                }
                fd = openat(d->fd[c], file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd >= 0)
                        break;
                r = -errno;
                if (fresh || attempt > 0 || (r != -ENOENT && r != -ENODEV && r != -ESTALE))
                        return r;
                /* A removed cgroup directory has no files left, also when a new one of the
                 * same name replaced it; a live one always has cgroup.procs, so the file
                 * itself is absent (no swap accounting, no PSI). */
                if (r == -ENOENT && faccessat(d->fd[c], "cgroup.procs", F_OK, 0) >= 0)
                        return r;
                task_dir_close(d, c);
        }
        return read_fd(fd, single, buf, size);
}

int cgroup_task_read_limits(CgroupBackend *b, const char *task, Limits *ret) {
        return cgroup_task_read_limits_at(b, NULL, task, ret);
}

/* Reads the limit files of a task (all of them, or only the one named file in hierarchy c). */
static int read_limits(CgroupBackend *b, CgroupTaskDirs *d, const char *task, CgroupController only_c,
                       const char *only_file, Limits *ret) {
        bool v2 = b->mode == CGROUP_MODE_V2;
        CgroupController cpu = v2 ? CGROUP_UNIFIED : CGROUP_CPU, mem = v2 ? CGROUP_UNIFIED : CGROUP_MEMORY;
        const struct {
                CgroupController c;
                const char *file;
        } files[] = {
                { cpu, v2 ? "cpu.max" : "cpu.cfs_quota_us" },
                { cpu, v2 ? NULL : "cpu.cfs_period_us" },
                { cpu, v2 ? "cpu.weight" : "cpu.shares" },
                { mem, v2 ? "memory.max" : "memory.limit_in_bytes" },
                { mem, v2 ? "memory.high" : "memory.soft_limit_in_bytes" },
        };
        char text[ELEMENTSOF(files)][64];
        char *value[ELEMENTSOF(files)] = {};
        bool any = false;
        int r;

        /* Direct reads, also on libcgroup hierarchies: libcgroup costs more per read than
         * open+read+close (bench/cgroup-read, docs/benchmarks.md). An absent file is an unset limit. */
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                if (!files[i].file)
                        continue;
                if (only_file && (files[i].c != only_c || !streq(files[i].file, only_file)))
                        continue;
                any = true;
                r = cgroup_task_read_at(b, d, files[i].c, task, files[i].file, true, text[i], sizeof text[i]);
                if (r == -ENOENT && !only_file)
                        continue;
                if (r < 0)
                        return r;
                value[i] = text[i];
        }
        if (!any)
                return -ENOENT;
        return cgroup_parse_limits(b->mode,
                                   &(CgroupLimitFiles) { .cpu_quota = value[0], .cpu_period = value[1], .cpu_weight = value[2],
                                                         .memory_max = value[3], .memory_high = value[4] },
                                   ret);
}

int cgroup_task_read_limits_at(CgroupBackend *b, CgroupTaskDirs *d, const char *task, Limits *ret) {
        return read_limits(b, d, task, _CGROUP_CONTROLLER_INVALID, NULL, ret);
}

int cgroup_task_read_limit_file(CgroupBackend *b, CgroupController c, const char *task, const char *file, Limits *ret) {
        if (!file)
                return -ENOENT;
        return read_limits(b, NULL, task, c, file, ret);
}

size_t cgroup_backend_limit_files(const CgroupBackend *b, CgroupLimitFile ret[static CGROUP_LIMIT_FILES_MAX]) {
        static const CgroupLimitFile v1[] = {
                { CGROUP_CPU, "cpu.cfs_quota_us" },
                { CGROUP_CPU, "cpu.cfs_period_us" },
                { CGROUP_CPU, "cpu.shares" },
                { CGROUP_MEMORY, "memory.limit_in_bytes" },
                { CGROUP_MEMORY, "memory.soft_limit_in_bytes" },
        }, v2[] = {
                { CGROUP_UNIFIED, "cpu.max" },
                { CGROUP_UNIFIED, "cpu.weight" },
                { CGROUP_UNIFIED, "memory.max" },
                { CGROUP_UNIFIED, "memory.high" },
        };

        if (b->mode == CGROUP_MODE_V2) {
                memcpy(ret, v2, sizeof v2);
                return ELEMENTSOF(v2);
        }
        memcpy(ret, v1, sizeof v1);
        return ELEMENTSOF(v1);
}

int cgroup_list_tasks(CgroupBackend *b, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *path = NULL;
        struct dirent *de;
        DIR *d;
        int r = 0;

        r = cgroup_backend_path(b, cgroup_backend_procs_controller(b), NULL, &path);
        if (r < 0)
                return r;
        d = opendir(path);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                TaskId id;

                if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                        continue;
                /* Only what the agent itself names: a directory named otherwise is not ours to adopt. */
                if (task_id_parse(de->d_name, &id) < 0)
                        continue;
                r = strv_extend(&l, de->d_name);
                if (r < 0)
                        break;
        }
        closedir(d);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return (int) strv_length(*ret);
}
