#!/usr/bin/env -S culprit trace -s
/* Samples per function and a histogram of sample periods (works without a hardware PMU). */
#pragma D option quiet

profile:::hz-999
{
	@samples[sym] = count();
	@periods = quantize(period);
}

END
{
	printa("%-40s %@8d\n", @samples);
	printa(@periods);
}
