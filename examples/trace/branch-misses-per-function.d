#!/usr/bin/env -S culprit trace -s
/* Branch misses per function (needs a hardware PMU), the top 10. */
#pragma D option quiet

pmc:::branch-misses-10000
{
	@misses[sym] = count();
}

END
{
	trunc(@misses, 10);
	printa("%-40s %@8d\n", @misses);
}
