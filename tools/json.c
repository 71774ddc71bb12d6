/*
 * json.c - the small piece of JSON writing every tool's --json shares.
 */
#include <stdio.h>

#include "dcpi/report.h"
#include "tools.h"

void tool_json_str(FILE *f, const char *s)
{
	rep_json_str(f, s);
}
