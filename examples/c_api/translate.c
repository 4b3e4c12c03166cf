/*===- translate.c - Translating with Loom from C -------------------------===*\
 *
 * Reads sentences from stdin, one per line, translates them with the
 * translator folder FOLDER and prints each sentence's translations (best
 * first) on stdout, one per line, as loom-translate does; the scores go to
 * stderr. A second translation with a bad option shows how errors come back.
 *
 *   translate FOLDER [BEAM NBEST] < input > output
 *
\*===----------------------------------------------------------------------===*/

#include <loom/loom.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads every line of `in` (without its newline) into a new array. */
static char **read_lines(FILE *in, size_t *count) {
  size_t capacity = 16;
  char **lines = malloc(capacity * sizeof *lines);
  char *line = NULL;
  size_t size = 0;
  ssize_t length;
  *count = 0;
  while (lines && (length = getline(&line, &size, in)) >= 0) {
    while (length > 0 && (line[length - 1] == '\n' || line[length - 1] == '\r'))
      line[--length] = '\0';
    if (*count == capacity) {
      capacity *= 2;
      char **grown = realloc(lines, capacity * sizeof *lines);
      if (!grown)
        break;
      lines = grown;
    }
    lines[(*count)++] = strdup(line);
  }
  free(line);
  return lines;
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: %s FOLDER [BEAM NBEST] < input\n", argv[0]);
    return 2;
  }
  char *error = NULL;
  loom_translator_options options;
  loom_translator_options_init(&options);
  options.threads = 1;
  loom_translator *translator = NULL;
  loom_status status =
      loom_translator_create(argv[1], &options, &translator, &error);
  if (status != LOOM_OK) {
    fprintf(stderr, "translate: %s: %s\n", loom_status_name(status), error);
    loom_free_string(error);
    return 1;
  }

  size_t count = 0;
  char **lines = read_lines(stdin, &count);
  loom_translation_options translation;
  loom_translation_options_init(&translation);
  if (argc == 4) {
    translation.beam = atoi(argv[2]);
    translation.nbest = atoi(argv[3]);
  }
  loom_result *result = NULL;
  status = loom_translate(translator, (const char *const *)lines, count,
                          &translation, &result, &error);
  int exit_code = 0;
  if (status != LOOM_OK) {
    fprintf(stderr, "translate: %s: %s\n", loom_status_name(status), error);
    loom_free_string(error);
    exit_code = 1;
  } else {
    for (size_t s = 0; s < loom_result_count(result); ++s)
      for (size_t r = 0; r < loom_result_nbest(result, s); ++r) {
        printf("%s\n", loom_result_text(result, s, r));
        fprintf(stderr, "sentence %zu, translation %zu: score %.4f\n", s + 1,
                r + 1, loom_result_score(result, s, r));
      }
    loom_result_free(result);
  }

  /* nbest may not exceed beam: refused with a message, not a crash. */
  translation.nbest = translation.beam + 1;
  status = loom_translate(translator, (const char *const *)lines, count,
                          &translation, &result, &error);
  if (status == LOOM_OK) {
    fprintf(stderr, "translate: nbest > beam was accepted\n");
    loom_result_free(result);
    exit_code = 1;
  } else {
    fprintf(stderr, "refused as expected (%s): %s\n", loom_status_name(status),
            error);
    loom_free_string(error);
  }

  for (size_t i = 0; i < count; ++i)
    free(lines[i]);
  free(lines);
  loom_translator_free(translator);
  return exit_code;
}
