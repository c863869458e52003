// SPDX-License-Identifier: MIT
/*
 * reader-unit, the fuzz judge (testsupport/judge.c) rejects what it
 * must, and every input of fuzz/regressions and fuzz/corpus replays
 * clean. Built with ASan and UBSan.
 */
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "testsupport.h"
#include "rtest.h"

/*
 * Every file in fuzz/regressions and fuzz/corpus, through the fuzz path:
 * how many, or -1 if an exporter's output for one of them was not clean.
 */
static int replay_dir(const char *dir)
{
	char path[4096];
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0, bad = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		uint8_t *buf;
		FILE *f;
		long len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		buf = malloc(len > 0 ? (size_t)len : 1);
		if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len) {
			if (fuzz_one(buf, (size_t)len)) {
				fprintf(stderr, "# %s: output not clean\n", path);
				bad++;
			}
			n++;
		}
		free(buf);
		fclose(f);
	}
	closedir(d);
	return bad ? -1 : n;
}

/* The fuzz harness's judge of exporter output rejects what it must. */
TEST(fuzz_output_checker_rejects_unclean_text)
{
	static const char *const bad[] = {
		"\x1b]52;c;aGk=\a", "a\rb", "\x7f", "\xff", "\x80", "\xc0\x80",
		"\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\t",
	};
	static const char good[] = "a\n\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbd\n";
	size_t i;

	EXPECT_TRUE(fuzz_output_is_clean((const unsigned char *)good, strlen(good)));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_FALSE(fuzz_output_is_clean((const unsigned char *)bad[i], strlen(bad[i])))
			TH_LOG("accepted bad[%zu]", i);
}

TEST(fuzz_series_checker_rejects_a_series_twice)
{
	char twice[] = "# HELP m x\nm{a=\"1\"} 1\nm{a=\"2\"} 1\nm{a=\"1\"} 2\n";
	char once[] = "# HELP m x\n# TYPE m counter\nm{a=\"1\"} 1\nm{a=\"2\"} 1\nn 3\n";

	EXPECT_FALSE(fuzz_series_are_unique(twice));
	EXPECT_TRUE(fuzz_series_are_unique(once));
}

TEST(fuzz_regressions_replay)
{
	EXPECT_GE(replay_dir(FUZZ_DIR "/regressions"), 0);
	EXPECT_GT(replay_dir(FUZZ_DIR "/corpus"), 0);
}

TEST_HARNESS_MAIN
