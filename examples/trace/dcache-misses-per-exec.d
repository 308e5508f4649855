#!/usr/bin/env -S culprit trace -s
/*
 * The Solaris IBS DTrace provider's first example: data-cache misses per executable,
 * over IBS op samples taken every 2000 x 16 ops.
 */
#pragma D option quiet

ibs-exec-2000
{
	@misses[execname] = sum(args[0]->IbsOpData3.bit.IbsDcMiss);
}

END
{
	printf("Dcache misses per exec:\n");
	printa(@misses);
}
