/*
 * tests/tu_clickhouse.h - a private clickhouse-server (Debian's 18.16) for
 * one test: its config, data, logs and temporary files all inside the test's
 * own folder, on loopback ports found free (HTTP, TCP, interserver), started
 * in the foreground as a child of the test (killed with the test if it dies:
 * PR_SET_PDEATHSIG), waited for on /ping and always stopped by the caller's
 * teardown.  No system service, nothing under /etc or /var.  Header-only.
 */
#ifndef DCPI_TU_CLICKHOUSE_H
#define DCPI_TU_CLICKHOUSE_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#define TU_CH_BIN "/usr/sbin/clickhouse-server"

struct tu_ch {
	char dir[512];		/* the server's folder, inside the test's */
	int http, tcp, inter;
	pid_t pid;
	char url[160];		/* clickhouse://127.0.0.1:HTTP/dcpi */
};

static inline int tu_ch_available(void)
{
	return access(TU_CH_BIN, X_OK) == 0;
}

/* A loopback port nobody listens on now (bound to 0, read back, closed). */
static inline int tu_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static inline int tu_ch_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "wx");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* A server's folder parent/name and its free ports, no config yet. */
static inline int tu_ch_alloc(struct tu_ch *ch, const char *parent, const char *name)
{
	memset(ch, 0, sizeof(*ch));
	ch->pid = -1;
	snprintf(ch->dir, sizeof(ch->dir), "%s/%s", parent, name);
	if (mkdir(ch->dir, 0700) < 0)
		return -1;
	ch->http = tu_free_port();
	ch->tcp = tu_free_port();
	ch->inter = tu_free_port();
	if (ch->http < 0 || ch->tcp < 0 || ch->inter < 0 || ch->http == ch->tcp ||
	    ch->tcp == ch->inter || ch->http == ch->inter)
		return -1;
	snprintf(ch->url, sizeof(ch->url), "clickhouse://127.0.0.1:%d/dcpi", ch->http);
	return 0;
}

/* Its config.xml and users.xml.  remote: the <remote_servers> body
 * (clusters) or NULL. */
static inline int tu_ch_config(struct tu_ch *ch, const char *remote)
{
	char cfg[8192], path[700];
	static const char users[] =
		"<?xml version=\"1.0\"?>\n<yandex>\n<profiles><default></default></profiles>\n"
		"<users><default><password></password><networks><ip>127.0.0.1</ip>"
		"<ip>::1</ip></networks><profile>default</profile><quota>default</quota>"
		"</default></users>\n<quotas><default></default></quotas>\n</yandex>\n";

	snprintf(cfg, sizeof(cfg),
		 "<?xml version=\"1.0\"?>\n<yandex>\n"
		 "<logger><level>warning</level><log>%1$s/log/server.log</log>"
		 "<errorlog>%1$s/log/err.log</errorlog><size>10M</size><count>1</count></logger>\n"
		 "<http_port>%2$d</http_port><tcp_port>%3$d</tcp_port>"
		 "<interserver_http_port>%4$d</interserver_http_port>\n"
		 "<interserver_http_host>127.0.0.1</interserver_http_host>\n"
		 "<listen_host>127.0.0.1</listen_host>\n"
		 "<path>%1$s/data/</path><tmp_path>%1$s/tmp/</tmp_path>"
		 "<user_files_path>%1$s/user_files/</user_files_path>"
		 "<format_schema_path>%1$s/format_schemas/</format_schema_path>\n"
		 "<mark_cache_size>67108864</mark_cache_size>"
		 "<uncompressed_cache_size>67108864</uncompressed_cache_size>\n"
		 "<users_config>%1$s/users.xml</users_config><default_profile>default"
		 "</default_profile><default_database>default</default_database>\n"
		 "<mlock_executable>false</mlock_executable>\n"
		 "<remote_servers>%5$s</remote_servers>\n</yandex>\n",
		 ch->dir, ch->http, ch->tcp, ch->inter, remote ? remote : "");
	snprintf(path, sizeof(path), "%s/config.xml", ch->dir);
	if (tu_ch_write(path, cfg) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/users.xml", ch->dir);
	return tu_ch_write(path, users);
}

static inline int tu_ch_prepare(struct tu_ch *ch, const char *parent, const char *name)
{
	return tu_ch_alloc(ch, parent, name) < 0 ? -1 : tu_ch_config(ch, NULL);
}

static size_t tu_ch_sink(char *p, size_t s, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return s * n;
}

static inline int tu_ch_ping(const struct tu_ch *ch)
{
	char url[128];
	long code = 0;
	CURL *c = curl_easy_init();
	CURLcode rc;

	if (!c)
		return -1;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/ping", ch->http);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, tu_ch_sink);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 2L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	return rc == CURLE_OK && code == 200 ? 0 : -1;
}

/* Start (or restart) the server and wait up to 60 s for it to answer. */
static inline int tu_ch_start(struct tu_ch *ch)
{
	char cfg[600], out[600];
	pid_t pid;

	snprintf(cfg, sizeof(cfg), "--config-file=%s/config.xml", ch->dir);
	snprintf(out, sizeof(out), "%s/stdout.log", ch->dir);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (chdir(ch->dir) < 0)
			_exit(126);
		execl(TU_CH_BIN, TU_CH_BIN, cfg, (char *)NULL);
		_exit(127);
	}
	ch->pid = pid;
	for (int i = 0; i < 600; i++) {
		int st;
		struct timespec ts = { 0, 100000000 };

		if (!tu_ch_ping(ch))
			return 0;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			ch->pid = -1;
			return -1;
		}
		nanosleep(&ts, NULL);
	}
	return -1;
}

/* Stop it with sig (SIGTERM: waits up to 30 s, then SIGKILL). */
static inline void tu_ch_stop(struct tu_ch *ch, int sig)
{
	if (ch->pid <= 0)
		return;
	kill(ch->pid, sig);
	for (int i = 0; i < 300; i++) {
		struct timespec ts = { 0, 100000000 };

		if (waitpid(ch->pid, NULL, WNOHANG) == ch->pid) {
			ch->pid = -1;
			return;
		}
		nanosleep(&ts, NULL);
	}
	kill(ch->pid, SIGKILL);
	waitpid(ch->pid, NULL, 0);
	ch->pid = -1;
}

#endif /* DCPI_TU_CLICKHOUSE_H */
