#!/usr/bin/env -S culprit trace -s
/*
 * Samples, events and the mean period per command in one table (printa of several
 * aggregations sharing their keys), with typed declarations and if/else.
 */
#pragma D option quiet

uint64_t total;
int kernel;

pmc:::cpu-clock
{
	@n[execname] = count();
	@ev[execname] = sum(period);
	@mean[execname] = avg(period);
	total += period;
	if (ip >= 0xffff800000000000) {
		kernel++;
	} else if (pid == 0) {
		@idle = count();
	}
}

END
{
	printf("%-20s %10s %14s %14s\n", "COMMAND", "SAMPLES", "EVENTS", "MEAN PERIOD");
	printa("%-20s %@10d %@14d %@14.1f\n", @n, @ev, @mean);
	printf("%d events in all; %d samples in the kernel\n", total, kernel);
}
