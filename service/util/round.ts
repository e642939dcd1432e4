/** To the hundredth (grams and money are shown and stored that way). */
export const round2 = (n: number): number => Math.round(n * 100) / 100;
