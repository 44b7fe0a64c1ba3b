*
lr