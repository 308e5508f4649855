#!/usr/bin/env -S culprit trace -s
/* Samples per second and per command, printed and cleared every second (sample time). */
#pragma D option quiet

pmc:::cpu-clock
{
	@[execname] = count();
	n++;
}

tick-1s
{
	printf("--- %d samples so far\n", n);
	printa("  %-20s %@d\n", @);
	clear(@);
}
